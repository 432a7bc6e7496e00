"""A code judge that asks the judge model through the target proxy (target: true): it sends
the question AgentV's way, reads the number the judge answers, and reports what /info says.
A request without the token must be refused."""

import json
import os
import sys
import urllib.error
import urllib.request

payload = json.load(sys.stdin)
url = os.environ["AGENTV_TARGET_PROXY_URL"]
token = os.environ["AGENTV_TARGET_PROXY_TOKEN"]


def call(path, body=None, auth=True):
    request = urllib.request.Request(
        url + path, data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 **({"Authorization": f"Bearer {token}"} if auth else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


unauthorized, _ = call("/info", auth=False)
status, answer = call("/invoke", {"question": payload["config"]["question"]})
second, refusal = call("/invoke", {"question": "again"})
_, info = call("/info")
print(json.dumps({"score": float(answer["rawText"]), "reasoning": answer["rawText"],
                  "details": {"unauthorized": unauthorized, "status": status,
                              "second": second, "refusal": refusal, "info": info}}))
