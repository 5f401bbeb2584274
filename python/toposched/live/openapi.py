"""The OpenAPI 3.0 document ``toposched serve`` serves at ``/v1/openapi.json``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .. import __version__


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        d["required"] = required
    return d


_JOB = {"type": "string", "minLength": 1, "maxLength": 256, "description": "job id, printable, no spaces"}
_NODES = {"type": "array", "items": {"type": "string"}, "description": "node names"}
_NODE_LIST = {
    "oneOf": [_NODES, {"type": "string", "description": "a Slurm host list, e.g. n[01-04],n07"}],
}
_ERROR = _obj({"error": {"type": "string"}, "field": {"type": "string", "nullable": True}})


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _write(summary: str, request: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
    common = {
        "400": _json(_ERROR, "malformed request; `field` names the field at fault"),
        "401": _json(_ERROR, "no bearer token"),
        "403": _json(_ERROR, "wrong bearer token"),
    }
    return {
        "summary": summary,
        "security": [{"bearer": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": request}}},
        "responses": {**responses, **common},
    }


def _read_post(summary: str, request: dict[str, Any], responses: dict[str, Any]) -> dict[str, Any]:
    """A POST that changes nothing: no token needed."""
    d = _write(summary, request, responses)
    del d["security"], d["responses"]["401"], d["responses"]["403"]
    return d


@lru_cache(maxsize=1)
def openapi_document() -> dict[str, Any]:
    placed = _obj(
        {
            "job": _JOB,
            "nodes": _NODES,
            "hosts": {
                "type": "array",
                "description": "with a requirement: the chosen hosts, best radius first, with the CPUs their agents propose",
                "items": _obj({"node": {"type": "string"}, "cpus": {"type": "string"}, "mems": {"type": "string"}, "radius": {"type": "string"}, "numa_domains": {"type": "integer"}}),
            },
        }
    )
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "toposched placement service",
            "version": __version__,
            "description": "Topology-aware placement with the simulator's own allocation policies (docs/live.md). "
            "Every decision is durable before it is answered.",
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "liveness: 503 once a commit of the state has failed (nothing more is acknowledged until a restart)",
                    "responses": {
                        "200": _json(_obj({"status": {"type": "string"}}), "up"),
                        "503": _json(_obj({"status": {"type": "string"}, "error": {"type": "string"}}), "a commit failed: restart the service"),
                    },
                }
            },
            "/v1/openapi.json": {"get": {"summary": "this document", "responses": {"200": {"description": "OpenAPI 3.0"}}}},
            "/metrics": {"get": {"summary": "Prometheus text format", "responses": {"200": {"description": "metrics"}}}},
            "/v1/allocate": {
                "post": _write(
                    "place a job now (or reserve it: EASY's allocate-or-reserve)",
                    _obj(
                        {
                            "job": _JOB,
                            "nodes": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                            "walltime_s": {"type": "integer", "minimum": 0, "maximum": 2**53, "description": "time limit, for reservations"},
                            "reserve": {
                                "type": "boolean",
                                "default": False,
                                "description": "if the job cannot start now, hold the (single) EASY reservation for it; "
                                "a reserve request is never held back by the current reservation",
                            },
                            "requirement": {
                                "description": "per-host requirement in the node agent's language (e.g. \"CORES=8;WAIT\", "
                                "docs/node-agent.md); only with --node-agents: hosts whose agents cannot meet it now are "
                                "not chosen, and the answer lists each chosen host's proposed CPUs (seed 002's filter + rank)",
                                "oneOf": [{"type": "string"}, {"type": "object"}],
                            },
                        },
                        ["job", "nodes", "walltime_s"],
                    ),
                    {
                        "200": _json(placed, "placed (asking again for a placed job returns the same nodes)"),
                        "202": _json(
                            _obj(
                                {
                                    "job": _JOB,
                                    "start_estimate_s": {"type": "integer", "description": "seconds from now"},
                                    "start_at_s": {"type": "integer", "description": "Unix time"},
                                    "nodes": _NODES,
                                }
                            ),
                            "reserved: cannot start now; EASY reservation on the current state",
                        ),
                        "409": _json(
                            _obj({"job": _JOB, "reason": {"type": "string"}, "never": {"type": "boolean"}}),
                            "cannot place it now (never=true: not on this fabric under this policy)",
                        ),
                    },
                )
            },
            "/v1/satisfiable": {
                "post": _read_post(
                    "could a job of this size ever run here",
                    _obj({"nodes": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}, "job": _JOB}, ["nodes"]),
                    {
                        "200": _json(
                            _obj(
                                {
                                    "nodes": {"type": "integer"},
                                    "satisfiable": {"type": "boolean"},
                                    "reason": {"type": "string", "nullable": True},
                                    "satisfiable_with_drained_nodes_out": {"type": "boolean"},
                                    "reason_with_drained_nodes_out": {"type": "string", "nullable": True},
                                }
                            ),
                            "answer",
                        )
                    },
                )
            },
            "/v1/release": {
                "post": _write(
                    "give a job's nodes back",
                    _obj({"job": _JOB}, ["job"]),
                    {
                        "200": _json(_obj({"job": _JOB, "released": {"type": "boolean"}, "nodes": _NODES, "note": {"type": "string"}}), "released, or released before"),
                        "404": _json(_ERROR, "no such job"),
                    },
                )
            },
            "/v1/nodes/drain": {
                "post": _write(
                    "never allocate these nodes (held ones leave service when their job ends)",
                    _obj({"nodes": _NODE_LIST, "reason": {"type": "string"}}, ["nodes"]),
                    {"200": _json(_obj({"changed": _NODES}), "nodes whose state changed")},
                )
            },
            "/v1/nodes/resume": {
                "post": _write(
                    "put drained nodes back in service",
                    _obj({"nodes": _NODE_LIST}, ["nodes"]),
                    {"200": _json(_obj({"changed": _NODES}), "nodes whose state changed")},
                )
            },
            "/v1/state": {
                "get": {
                    "summary": "allocations, free nodes, per leaf and pod occupancy, drained nodes, the reservation",
                    "responses": {"200": {"description": "state", "content": {"application/json": {"schema": {"type": "object"}}}}},
                },
                "put": _write(
                    "replace the allocation table by the resource manager's view (after a crash)",
                    _obj(
                        {
                            "allocations": {
                                "type": "object",
                                "additionalProperties": {
                                    "oneOf": [
                                        _NODE_LIST,
                                        _obj(
                                            {"nodes": _NODE_LIST, "start_s": {"type": "integer", "minimum": 0, "maximum": 2**53}, "walltime_s": {"type": "integer", "minimum": 0, "maximum": 2**53}},
                                            ["nodes"],
                                        ),
                                    ]
                                },
                            }
                        },
                        ["allocations"],
                    ),
                    {"200": _json(_obj({"allocations": {"type": "integer"}}), "replaced")},
                ),
            },
        },
    }
