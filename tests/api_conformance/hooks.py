"""Rules JSON Schema cannot state, applied to schemathesis' positive cases.

docs/openapi.json states every rule of a single value it can: not a Bech32 checksum (an age
recipient) nor a duration's range (a command_expiry), which this hook mends. A few rules join two
values (a request
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

# A well-formed age recipient: its pattern is in the schema, its checksum cannot be.
RECIPIENT = "age1st6jlmq7wdpq6uthjknv83myxxm4u5jr3ts09zzm89mdyapjmyysl77cn9"

# docs/runners.md: which state storage each runner type takes (berth's own: all of them).
STORAGE = {
    "serverless-ecs": {"s3", "berth"},
    "vm": {"s3", "gcs", "azurerm", "berth"},
    "local": {"s3", "gcs", "azurerm", "berth"},
}


# Kubernetes quantity suffixes, for a quantity's size.
SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
          "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "P": 1e15, "E": 1e18}


def too_large(quantity):
    """berth keeps quantities up to 10^27 exactly; the pattern cannot say so."""
    m = QUANTITY.match(quantity)
    if not m:
        return False
    suffix = m.group(3) or ""
    number = quantity[: len(quantity) - len(suffix)]
    if suffix[:1] in ("e", "E") and suffix not in SUFFIX:
        return float(number + suffix) > 1e27
    return float(number) * SUFFIX[suffix] > 1e27


def mend_labels(labels):
    """A quantity beyond what berth keeps becomes 1Gi; a request label above its limit: the limit
    becomes the request."""
    for key, value in labels.items():
        if key.startswith(LABEL) and key != LABEL + "image" and isinstance(value, str):
            if too_large(value):
                labels[key] = "1Gi"
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
    if isinstance(runner.get("command_expiry"), str):
        runner["command_expiry"] = "1h"  # 10s to 168h
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
    if isinstance(body.get("log_recipient"), str):
        body["log_recipient"] = RECIPIENT
    if "/runners" in case.operation.path:
        mend_runner(body)
    return case
