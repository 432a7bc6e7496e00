from pydantic import BaseModel, Field


class EchoIn(BaseModel):
    message: str
    repeat: int | None = 1
    prefix: str | None = None


class EchoOut(BaseModel):
    message: str = Field(alias="message")


def main(input: EchoIn) -> EchoOut:
    result = []
    for _ in range(input.repeat):
        line = input.message
        if input.prefix:
            line = f"{input.prefix}: {line}"
        result.append(line)
    return EchoOut(message="\n".join(result))
