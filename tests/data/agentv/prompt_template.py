"""An executable prompt template (AgentV's prompt: {script: [...]}): it reads the case on
stdin and prints the judge's user prompt. Every argument after the script is echoed, so a
test can see that arguments reach it as written (no shell)."""

import json
import sys

case = json.load(sys.stdin)
style = case["config"].get("style", "plain")
print(f"Grade this answer ({style} grading): {case['candidate_answer']}")
print(f"Question: {case['question']}")
print(f"Arguments: {json.dumps(sys.argv[1:])}")
