# SPDX-License-Identifier: MIT
"""Reading an environment's rows the way `describe`'s dataset rules allow; shared by the
Verifiers v0 shim (which wraps them in a `datasets.Dataset`) and the v1 tasksets."""

import json
import os

_KINDS = {"jsonl": "a JSONL file", "disk": "a save_to_disk directory",
          "hub": "a Hugging Face dataset id"}


def source_kind(rules, args):
    """'jsonl', 'disk' or 'hub' for args['dataset'], or ValueError naming what is accepted."""
    source = args.get("dataset")
    if source is None:
        raise ValueError("dataset is required")
    sources = rules.get("sources", ["jsonl"])
    if os.path.isdir(source) and "disk" in sources:
        return "disk"
    if os.path.isfile(source) and "jsonl" in sources:
        return "jsonl"
    if "hub" in sources and not os.path.exists(source):
        return "hub"
    raise ValueError(f"dataset {source!r}: expected " +
                     " or ".join(_KINDS[k] for k in sources if k in _KINDS))


def load_datasets_object(kind, args):
    """A save_to_disk directory or hub dataset through `datasets` (jsonl needs no library)."""
    import datasets

    source, split = args["dataset"], args.get("split", "train")
    if kind == "disk":
        loaded = datasets.load_from_disk(source)
        if hasattr(loaded, "keys") and not hasattr(loaded, "column_names"):
            if split not in loaded:
                raise KeyError(f"dataset {source!r} has no split {split!r}")
            loaded = loaded[split]
        return loaded
    return datasets.load_dataset(source, split=split)


def read_jsonl(path, split, split_rule):
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not JSON: {error}") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: each line must be a JSON object")
            if split_rule == "overwrite" or (split_rule == "add" and "split" not in row):
                row["split"] = split
            rows.append(row)
    return rows


def iter_rows(rules, args):
    """Every row as a plain dict, with the split column applied as the rules say."""
    kind = source_kind(rules, args)
    split, split_rule = args.get("split", "train"), rules.get("split_column", "add")
    if kind == "jsonl":
        yield from read_jsonl(args["dataset"], split, split_rule)
        return
    for row in load_datasets_object(kind, args):
        row = dict(row)
        if split_rule != "none" and "split" not in row:
            row["split"] = split
        yield row
