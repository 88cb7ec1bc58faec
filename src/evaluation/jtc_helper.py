# SPDX-License-Identifier: MIT
# primebeaker's bridge to JTC for managed evaluations (docs/evaluation.md "The Python helper").
# Run as `python3 -c <this file>`: reads one JSON request on stdin, writes one JSON answer on
# stdout; everything else printed (by JTC, LiteRegistry or their children) goes to stderr.
# One process serves a whole command: JTC's answers for every job, then, for each job JTC did not
# stop, the LiteRegistry launcher request through the services module's helper (whose source is
# passed in the request and executed here, so it stays one process).
import datetime
import importlib
import json
import os
import sys
import traceback

if sys.path and sys.path[0] == "":
    del sys.path[0]  # -c puts the current directory first; never import from it

JTC_REQUIREMENT = "jtc"
REGISTRY_MODULE = "jtc.common.workflows.registry"
WORKLOAD_CLASSES = {
    "standard": ("jtc.eval.worker", "EvaluationWorkloadConfig"),
    "search-agent": ("jtc.eval.search_worker", "SearchAgentWorkloadConfig"),
    "rejection-sampling": ("jtc.eval.rejection_sampling_worker", "RejectionSamplingWorkloadConfig"),
    "rubric-judge-audit": ("jtc.eval.rubric_judge_audit_worker", "RubricJudgeAuditWorkloadConfig"),
    "workflow": ("jtc.eval.workflow_worker", "WorkflowWorkloadConfig"),
}
AUDIT_MODULE = "jtc.eval.rubric_judge_audit_worker"


def describe(error):
    return f"{type(error).__name__}: {error}"


def jtc_status():
    try:
        importlib.import_module("jtc")
    except ImportError as error:
        return {"available": False, "version": None, "error": describe(error)}
    version = None
    try:
        from importlib import metadata
        version = metadata.version(JTC_REQUIREMENT)
    except Exception:
        pass
    return {"available": True, "version": version, "error": None}


def workflow_names(status, fallback):
    if status["available"]:
        try:
            registry = importlib.import_module(REGISTRY_MODULE)
            return {"names": [str(n) for n in registry.workflow_names()], "source": "jtc"}
        except Exception as error:
            return {"names": list(fallback), "source": "fallback",
                    "error": f"{REGISTRY_MODULE}: {describe(error)}"}
    return {"names": list(fallback), "source": "fallback"}


def jtc_resource(requested):
    """A template from JTC's packaged resources, or None."""
    from importlib import resources
    root = resources.files("jtc")
    for candidate in (root.joinpath(requested), root.joinpath("resources", requested),
                      root.joinpath("templates", os.path.basename(requested))):
        try:
            if candidate.is_file():
                return str(candidate), candidate.read_text(encoding="utf-8")
        except Exception:
            continue
    return None


def to_dict(config):
    if hasattr(config, "model_dump"):
        return config.model_dump(mode="json")
    import dataclasses
    if dataclasses.is_dataclass(config):
        return dataclasses.asdict(config)
    return dict(config)


def workload_config(kind, data):
    module_name, class_name = WORKLOAD_CLASSES[kind]
    cls = getattr(importlib.import_module(module_name), class_name)
    if hasattr(cls, "model_validate"):
        return cls.model_validate(data)
    return cls(**data)


def dump_workload(config):
    if hasattr(config, "model_dump_json"):
        return json.loads(config.model_dump_json())
    return to_dict(config)


class Stop(Exception):
    """JTC's answer ends this job before any service is launched."""

    def __init__(self, **payload):
        super().__init__(payload.get("message", ""))
        self.payload = payload


def audit_step(job, config, status):
    audit = job.get("audit") or {}
    mode = audit.get("mode")
    if not mode:
        return None
    if not status["available"]:
        if mode == "coordinate":
            raise Stop(reason="jtc_missing", message=status["error"])
        return {"expected_records": None, "sample_complete": None, "audit_complete": None}
    worker = importlib.import_module(AUDIT_MODULE)
    expected = getattr(config, "expected_records", None)
    if callable(expected):
        expected = expected()
    if expected is None and hasattr(worker, "expected_records"):
        expected = worker.expected_records(config)
    if mode == "probe":
        return {"expected_records": expected,
                "sample_complete": bool(worker.sample_complete(config)),
                "audit_complete": bool(worker.audit_complete(config))}
    force = bool(audit.get("force"))
    outputs = to_dict(config).get("outputs", {})
    audit_dir = outputs.get("audit_dir")

    def overall(result=None):
        if isinstance(result, dict) and "overall" in result:
            return result["overall"]
        with open(os.path.join(audit_dir, "summary.json"), encoding="utf-8") as handle:
            return json.load(handle).get("overall")

    if worker.audit_complete(config) and not force:
        raise Stop(reason="audit_done", result={"status": "complete_existing",
                                                "expected_records": expected,
                                                "overall": overall()})
    worker.prepare_sample(config, force=force)
    responses = to_dict(config).get("inference", {}).get("responses_path")
    rows = worker.jsonl_count(responses) if responses and os.path.exists(responses) else 0
    if expected is not None and rows == expected and not force:
        finished = worker.finish_audit(config)
        raise Stop(reason="audit_done", result={"status": "complete_recovered",
                                                "expected_records": expected,
                                                "overall": overall(finished)})
    if rows > 0 and not force:
        raise Stop(reason="audit_partial",
                   message=f"partial response stream has {rows} rows; pass --force to rerun "
                           "inference")
    return {"expected_records": expected}


def answer_job(job, status, names, literegistry):
    out = {"stopped": None, "templates": [], "workload": None, "audit": None, "literegistry": None}
    try:
        workflow = job.get("workflow")
        if workflow is not None and workflow not in names["names"]:
            raise Stop(reason="unsupported_workflow",
                       message=f"unsupported JTC workflow {workflow!r}; choose one of: "
                               + ", ".join(names["names"]))
        for requested in job.get("templates", []):
            found = jtc_resource(requested) if status["available"] else None
            if found is None:
                raise Stop(reason="template_not_found", requested=requested)
            out["templates"].append({"requested": requested, "path": found[0],
                                     "content": found[1]})
        config = None
        workload = job.get("workload")
        if workload is not None and status["available"]:
            try:
                config = workload_config(workload["kind"], workload["data"])
            except (ImportError, AttributeError) as error:
                out["workload_note"] = f"JTC has no workload model for {workload['kind']}: " \
                                       f"{describe(error)}"
            except Exception as error:
                raise Stop(reason="workload_invalid", message=describe(error))
            else:
                out["workload"] = dump_workload(config)
        out["audit"] = audit_step(job, config, status)
        if job.get("literegistry") is not None:
            out["literegistry"] = literegistry(job["literegistry"])
    except Stop as stop:
        out["stopped"] = stop.payload
    return out


def load_literegistry(source):
    if not source:
        return None
    namespace = {"__name__": "primebeaker_literegistry_helper"}
    exec(compile(source, "literegistry_helper.py", "exec"), namespace)
    failure = namespace["Failure"]

    def call(request):
        try:
            return {"ok": True, "result": namespace["handle"](request)}
        except failure as error:
            return error.payload
        except Exception as error:  # noqa: B902 - reported as JSON like the services helper
            return {"ok": False, "error": "internal", "message": describe(error),
                    "traceback": traceback.format_exc()}
    return call


def handle(request):
    status = jtc_status()
    names = workflow_names(status, request.get("fallback_workflows", []))
    literegistry = load_literegistry(request.get("literegistry_helper"))
    jobs = [answer_job(job, status, names, literegistry) for job in request.get("jobs", [])]
    return {"jtc": status, "workflows": names, "jobs": jobs,
            "now": datetime.datetime.now(datetime.timezone.utc).isoformat()}


def main():
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # JTC/LiteRegistry prints and child processes must not corrupt the answer
    sys.stdout = sys.stderr
    try:
        answer = {"ok": True, "result": handle(json.load(sys.stdin))}
    except BaseException as error:  # noqa: B902 - report everything as JSON
        answer = {"ok": False, "error": "internal", "message": describe(error),
                  "traceback": traceback.format_exc()}
    with os.fdopen(answer_fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(answer, default=str))
        out.write("\n")


if __name__ == "__main__":
    main()
