"""The base every paperlens model shares."""

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """Strict: unknown fields are an error, so a typo in a file or a drifted producer is caught."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
