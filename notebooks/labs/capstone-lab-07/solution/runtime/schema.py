"""L7: every boundary payload is checked against a versioned JSON Schema."""

import json
from pathlib import Path

import jsonschema_rs

from .result import DomainError, Err, Ok


class SchemaRegistry:
    def __init__(self, root: Path):
        self.validators = {}
        for path in sorted(Path(root).glob("*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            self.validators[doc["$id"]] = jsonschema_rs.validator_for(doc)

    def validate(self, payload, schema_id: str):
        validator = self.validators.get(schema_id)
        if validator is None:
            return Err(DomainError("schema", "SCHEMA_NOT_FOUND", schema_id))
        errors = [e.message for e in validator.iter_errors(payload)]
        if errors:
            return Err(DomainError("schema", "SCHEMA_INVALID", f"{schema_id}: {errors[0]}"))
        return Ok(payload)
