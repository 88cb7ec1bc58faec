# SPDX-License-Identifier: MIT
"""A stand-in for Hugging Face `datasets`, loaded only when the real package is missing.

Only what the shim and the stand-in Verifiers use: Dataset.from_list, column access, map,
add_column, remove_columns, rename_column, select, shuffle. Loading from disk or the Hub is not
possible here and says so."""

import random

BACKEND = "stand-in"


class Dataset:
    def __init__(self, rows):
        self._rows = [dict(r) for r in rows]
        columns = []
        for row in self._rows:
            for key in row:
                if key not in columns:
                    columns.append(key)
        for row in self._rows:  # Arrow unifies schemas: a missing key reads as None
            for key in columns:
                row.setdefault(key, None)
        self._columns = columns

    @classmethod
    def from_list(cls, rows):
        return cls(rows)

    @property
    def column_names(self):
        return list(self._columns)

    def __len__(self):
        return len(self._rows)

    def __iter__(self):
        return (dict(r) for r in self._rows)

    def __getitem__(self, key):
        if isinstance(key, str):
            return [row[key] for row in self._rows]
        return dict(self._rows[key])

    def map(self, function, **kwargs):
        return Dataset([{**row, **(function(dict(row)) or {})} for row in self._rows])

    def add_column(self, name, values):
        if len(values) != len(self._rows):
            raise ValueError("column length does not match the dataset")
        return Dataset([{**row, name: value} for row, value in zip(self._rows, values)])

    def remove_columns(self, names):
        names = [names] if isinstance(names, str) else list(names)
        return Dataset([{k: v for k, v in row.items() if k not in names} for row in self._rows])

    def rename_column(self, old, new):
        return Dataset([{(new if k == old else k): v for k, v in row.items()}
                        for row in self._rows])

    def select(self, indices):
        return Dataset([self._rows[i] for i in indices])

    def shuffle(self, seed=None):
        rows = list(self._rows)
        random.Random(seed).shuffle(rows)
        return Dataset(rows)


class DatasetDict(dict):
    pass


def load_from_disk(path):
    raise RuntimeError(f"stand-in datasets cannot load_from_disk({path!r})")


def load_dataset(name, split=None, **kwargs):
    raise RuntimeError(f"stand-in datasets cannot load_dataset({name!r}) without the network")
