"""A code judge that scores 1 and returns the payload it received (in details)."""

import json
import sys

print(json.dumps({"score": 1.0, "details": {"received": json.load(sys.stdin)}}))
