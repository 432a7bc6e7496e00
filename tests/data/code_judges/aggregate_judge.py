"""A composite aggregator for tests: passes when 'safety' passed, else 0; echoes results."""

import json
import sys

results = json.load(sys.stdin)["results"]
safety = results["safety"]
print(json.dumps({
    "score": results["quality"]["score"] if safety["passed"] else 0.0,
    "hits": [f"saw {name}" for name in sorted(results)],
    "misses": [],
    "reasoning": "safety gates quality",
    "details": {"results": results},
}))
