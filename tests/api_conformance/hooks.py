"""Rules between fields that JSON Schema cannot state, applied to schemathesis' positive cases.

docs/openapi.json states every rule of a single value. A few rules join two values (a request
label and its limit; a runner type and the state storage types it takes; a Pod template's image
and the one beside it): berthd refuses a body that breaks one, naming the field, and that is
right. This hook mends such bodies before they are sent, so that schemathesis' check that
every schema-valid request is accepted still covers everything else about them. schemathesis
revalidates a case a hook changed, so a negative case stays negative.
"""
import re

import schemathesis
from schemathesis import GenerationMode

LABEL = "berth.dev/runner-spec.kubernetes_"
QUANTITY = re.compile(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$")

# docs/runners.md: which state storage each runner type takes (berth's own: all of them).
STORAGE = {
    "serverless-ecs": {"s3", "berth"},
    "vm": {"s3", "gcs", "azurerm", "berth"},
    "local": {"s3", "gcs", "azurerm", "berth"},
}


def mend_labels(labels):
    """A request label above its limit: the limit becomes the request."""
    for resource in ("cpu", "memory"):
        request = labels.get(f"{LABEL}request_{resource}")
        limit = labels.get(f"{LABEL}limit_{resource}")
        if isinstance(request, str) and isinstance(limit, str) and QUANTITY.match(request):
            labels[f"{LABEL}limit_{resource}"] = request


def mend_runner(body):
    runner = body.get("runner_configuration")
    storage = body.get("state_storage_configuration")
    if not isinstance(runner, dict) or not isinstance(storage, dict):
        return
    accepted = STORAGE.get(runner.get("type"))
    if accepted is not None and storage.get("type") not in accepted:
        body["state_storage_configuration"] = {"type": "berth"}
    job = runner.get("job")
    template = job.get("pod_template") if isinstance(job, dict) else None
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if isinstance(containers, list):
        for main in containers:
            if isinstance(main, dict) and isinstance(main.get("image"), str) and job.get("image"):
                job["image"] = main["image"]


@schemathesis.hook
def map_case(ctx, case):
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
        return case
    body = case.body
    if not isinstance(body, dict):
        return case
    if isinstance(body.get("labels"), dict):
        mend_labels(body["labels"])
    if "/runners" in case.operation.path:
        mend_runner(body)
    return case
