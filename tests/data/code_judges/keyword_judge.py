"""A code judge for tests: scores by keywords and echoes what it received in details."""

import json
import sys

payload = json.load(sys.stdin)
keywords = payload["config"].get("keywords", [])
answer = payload["candidate_answer"].lower()
hits = [k for k in keywords if k.lower() in answer]
misses = [k for k in keywords if k.lower() not in answer]
print("log line before the result")
print(json.dumps({
    "score": len(hits) / len(keywords) if keywords else 1.0,
    "hits": hits,
    "misses": misses,
    "reasoning": f"{len(hits)} of {len(keywords)} keywords",
    "details": {"received": payload},
}))
