"""The base every advisor model derives from: field docstrings become schema descriptions, and
unknown fields are an error (a typo in a workload or rule file must not pass silently)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class FrozenModel(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)
