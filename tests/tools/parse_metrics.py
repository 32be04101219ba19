"""Parses a Prometheus text exposition (stdin) with prometheus_client's own parser and prints
its samples as JSON lines: {"name", "labels", "value"}. A document the parser refuses exits
non-zero, so a test that reads berthd's /metrics through it fails on a malformed exposition."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = sys.stdin.read()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            print(json.dumps({"family": family.name, "type": family.type, "name": sample.name,
                              "labels": sample.labels, "value": sample.value}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
