"""The agent under test, run as AgentV 4 runs a cli target: the question is the first argument,
and the answer goes to the file named by the second ({OUTPUT_FILE}), not to stdout."""

import sys

question, output_file = sys.argv[1], sys.argv[2]
answer = "The capital of France is Paris." if "france" in question.lower() else "I do not know."
with open(output_file, "w", encoding="utf-8") as out:
    out.write(answer)
