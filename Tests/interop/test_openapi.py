"""docs/openapi.yaml against the code: the document is a valid OpenAPI 3.0 description, its
routes are exactly those Sources/PatchServer/Service/Routes.swift registers, its error
codes are those the server can send, and its patterns and examples agree with the rules
(the app-name and app-version vectors of docs/PROTOCOL.md).

    python -m pytest Tests/interop/test_openapi.py -q

Needs PyYAML; the validation of the document and of its examples also needs
openapi-spec-validator (and the openapi-schema-validator it brings), and is skipped without it.
"""

import copy
import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

REPO_ROOT = Path(__file__).resolve().parents[2]
OPENAPI = REPO_ROOT / "docs" / "openapi.yaml"
PROTOCOL = REPO_ROOT / "docs" / "PROTOCOL.md"
# patchd answers errors from its transport (HTTPTransport: framing, limits) and its service
# (PatchServer: everything routed).
SERVER_SOURCES = [REPO_ROOT / "Sources" / "HTTPTransport", REPO_ROOT / "Sources" / "PatchServer"]

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

@pytest.fixture(scope="module")
def spec():
    with OPENAPI.open(encoding="utf-8") as f:
        document = yaml.safe_load(f)
    assert isinstance(document, dict), "docs/openapi.yaml is not a YAML mapping"
    return document


def operations(spec):
    """(METHOD, path, operation) for every operation of the document."""
    for path, item in spec.get("paths", {}).items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                yield method.upper(), path, operation


# MARK: Routes.swift


# MARK: The document is OpenAPI 3.0


def test_is_a_valid_openapi_3_0_document(spec):
    assert str(spec.get("openapi", "")).startswith("3.0."), "expected an OpenAPI 3.0.x document"
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(spec)


def test_basic_shape(spec):
    """Checks that hold even without openapi-spec-validator installed."""
    assert spec["openapi"] == "3.0.3"
    assert spec["info"]["title"] and spec["info"]["version"]
    for method, path, operation in operations(spec):
        where = f"{method} {path}"
        assert operation.get("operationId"), f"{where} has no operationId"
        assert operation.get("responses"), f"{where} documents no responses"
        for status in operation["responses"]:
            assert re.fullmatch(r"[1-5][0-9][0-9]|default", str(status)), f"{where}: bad status key {status!r}"


def test_path_parameters_are_declared(spec):
    for method, path, operation in operations(spec):
        declared = {p["name"] for p in resolved_parameters(spec, path, operation) if p.get("in") == "path"}
        templated = set(re.findall(r"\{([^}]+)\}", path))
        assert declared == templated, f"{method} {path}: path parameters {sorted(templated)}, declared {sorted(declared)}"


def test_operation_ids_are_unique(spec):
    ids = [operation["operationId"] for _, _, operation in operations(spec)]
    assert len(ids) == len(set(ids))


# MARK: Docs and code agree


# openapi.yaml against the operation table, and the router against it: OperationTableTests and
# RouteTableTests (Swift), which read the table itself rather than parsing its source.


def server_errors():
    """(status, code) of every HTTPError the server sources construct."""
    found = set()
    for source in (file for directory in SERVER_SOURCES for file in directory.rglob("*.swift")):
        found |= {(int(s), c) for s, c in re.findall(r'HTTPError\(\s*(\d{3})\s*,\s*"([a-z_]+)"', source.read_text(encoding="utf-8"))}
    assert found, "found no HTTPError(status, \"code\", ...) in Sources/HTTPTransport or Sources/PatchServer"
    return found


def test_error_codes_match_the_server(spec):
    codes = set(spec["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"])
    from_code = {code for _, code in server_errors()}
    assert codes == from_code, f"Error.code enum {sorted(codes)} vs the server's {sorted(from_code)}"


def test_every_error_status_is_documented_somewhere(spec):
    statuses = {str(status) for _, _, operation in operations(spec) for status in operation["responses"]}
    for status, code in sorted(server_errors()):
        assert str(status) in statuses, f"the server answers {status} ({code}) but no operation documents it"


def test_common_responses(spec):
    for method, path, operation in operations(spec):
        where = f"{method} {path}"
        responses = {str(s) for s in operation["responses"]}
        # Every routed request passes the per-IP limit; every path refuses other methods.
        assert {"405", "429"} <= responses, f"{where} must document 405 and 429"
        if operation.get("security"):
            assert {"401", "403"} <= responses, f"{where} takes a token: document 401 and 403"
        if method == "POST":
            assert "413" in responses, f"{where} takes a body: document 413"
        for status, response in operation["responses"].items():
            if str(status).startswith(("4", "5")):
                content = resolve(spec, response).get("content", {})
                schema = content.get("application/json", {}).get("schema", {})
                assert schema.get("$ref") == "#/components/schemas/Error", f"{where} {status} must use the Error schema"


def test_the_check_documents_its_headers(spec):
    check = spec["paths"]["/v1/apps/{app}/versions/{appVersion}/patch"]["get"]
    assert {"200", "204", "304", "429"} <= set(map(str, check["responses"]))
    ok = set(check["responses"]["200"]["headers"])
    assert {"X-Patch-Number", "X-Patch-SHA256", "X-Patch-MD5", "ETag", "X-Patch-Encryption",
            "X-Patch-Plaintext-SHA256", "Cache-Control", "Vary"} <= ok
    throttled = resolve(spec, check["responses"]["429"])
    assert "Retry-After" in throttled["headers"]
    headers = {p["name"] for p in resolved_parameters(spec, "", check) if p["in"] == "header"}
    assert {"X-Device-ID", "X-Device-Secret", "If-None-Match"} <= headers


def test_every_metered_route_documents_the_device_secret(spec):
    """The routes that meter a device by its ID also take its X-Device-Secret (issue 43, item 4)."""
    for path in ["/v1/apps/{app}/versions/{appVersion}/patch", "/v1/apps/{app}/metadata/{file}", "/jspatch/{app}/{appVersion}/latest"]:
        operation = spec["paths"][path]["get"]
        headers = {p["name"]: p for p in resolved_parameters(spec, "", operation) if p["in"] == "header"}
        assert {"X-Device-ID", "X-Device-Secret"} <= set(headers), path
        assert headers["X-Device-Secret"]["schema"]["pattern"] == "^[A-Za-z0-9_-]{32,128}$"


# MARK: Patterns and examples


def protocol_vectors(kind):
    """The ```vector blocks of docs/PROTOCOL.md of one kind, as lists of (key, value)."""
    blocks = re.findall(r"^```vector\n(.*?)^```", PROTOCOL.read_text(encoding="utf-8"), flags=re.S | re.M)
    out = []
    for block in blocks:
        fields = []
        for line in block.splitlines():
            if line.strip():
                key, _, value = line.partition(":")
                fields.append((key.strip(), value[1:] if value.startswith(" ") else value))
        if ("kind", kind) in fields:
            out.append(fields)
    assert out, f"docs/PROTOCOL.md has no {kind} vectors"
    return out


def schema_accepts(spec, schema, value):
    validator = pytest.importorskip("openapi_schema_validator")
    try:
        validator.validate(value, deref(spec, schema))
        return True
    except Exception:  # jsonschema.ValidationError
        return False


@pytest.mark.parametrize("schema_name, kind", [("AppName", "app-names"), ("AppVersion", "app-versions"), ("ChannelName", "channel-names")])
def test_patterns_agree_with_protocol_vectors(spec, schema_name, kind):
    schema = spec["components"]["schemas"][schema_name]
    for fields in protocol_vectors(kind):
        for key, value in fields:
            if key in ("valid", "invalid"):
                accepted = schema_accepts(spec, schema, value)
                assert accepted == (key == "valid"), \
                    f"{schema_name} {'refuses' if key == 'valid' else 'accepts'} {value!r}, an {key} {kind} vector"


def test_examples_match_their_schemas(spec):
    validator = pytest.importorskip("openapi_schema_validator")
    checked = 0
    for where, node in walk(spec):
        if not isinstance(node, dict) or "example" not in node:
            continue
        # A media type or parameter has its schema beside the example; a schema holds its own.
        schema = node["schema"] if "schema" in node else {k: v for k, v in node.items() if k != "example"}
        validator.validate(node["example"], deref(spec, schema))
        checked += 1
    assert checked >= 10, f"only {checked} examples found"


# MARK: Helpers


def resolve(spec, node):
    """Follows a local `$ref` (one level at a time until none is left)."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), f"only local references are supported, got {ref}"
        node = spec
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def deref(spec, node, depth=0):
    """A copy of `node` with every local `$ref` replaced by its target (no schema here is recursive)."""
    assert depth < 50, "reference cycle"
    node = resolve(spec, node)
    if isinstance(node, dict):
        return {k: deref(spec, v, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [deref(spec, v, depth + 1) for v in node]
    return copy.deepcopy(node)


def resolved_parameters(spec, path, operation):
    item = spec["paths"].get(path, {})
    return [resolve(spec, p) for p in item.get("parameters", []) + operation.get("parameters", [])]


def walk(node, where="#"):
    yield where, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{where}/{index}")
