#!/usr/bin/env python3
"""Parses a Prometheus text-format file with Prometheus's own parser (prometheus_client) and prints
every sample as one JSON object per line: {"name", "labels", "value"}. Exit 1 if it does not parse."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
try:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            print(json.dumps({"name": s.name, "type": family.type, "labels": s.labels, "value": s.value}))
except Exception as e:  # the parser's own error: the file is not valid text format
    print(f"metrics_parse: {e}", file=sys.stderr)
    sys.exit(1)
