from typing import TypedDict


class EchoIn(TypedDict, total=False):
    message: str
    repeat: int
    prefix: str


class EchoOut(TypedDict):
    message: str


def main(input: EchoIn) -> EchoOut:
    result = []
    for _ in range(input.get("repeat", 1)):
        line = input["message"]
        if input.get("prefix"):
            line = f"{input['prefix']}: {line}"
        result.append(line)
    return {"message": "\n".join(result)}
