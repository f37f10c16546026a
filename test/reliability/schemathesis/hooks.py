"""Schemathesis hooks for test/reliability/schemathesis.test.ts.

Random ids name nothing, so without help every operation that takes a run, workflow or file id
would only ever answer 404 (or 403 for a signed link). These hooks swap real ids of the test's
account into about two thirds of the *positive* cases (a negative case keeps its broken value:
it is there to be refused), make most positive starts name a published workflow with valid
inputs, and give most positive publishes a runnable graph (generated graphs are almost never
valid), so the run, stream, cancel, publish, contract and file-content paths answer 2xx for real.
Signed links (a file's content, a run's stream link) get a real link's id, `expires`, `kid` and
`sig` together, an output page a finished run's own output key, and the codec server's path form
the operators' token (WRS_ST_CODEC), else they would only ever answer 403, 404 and 401.

The choice is a hash of the generated value, not a random draw: Hypothesis replays a failing
case to confirm it, and the replay must make the same request.

The fixtures come from the JSON file named by WRS_ST_FIXTURES (written by the test):
  {"runs": [finished run ids], "live_runs": [ids of runs a slow model call keeps running],
   "workflows": [{"id", "slug", "version", "version_id", "inputs", "live"}],
   "deletable_runs": [ids of runs, finished and live, only DELETE may remove],
   "files": [file ids], "deletable_files": [ids of uploads only DELETE may remove],
   "deletable_workflows": [ids of workflows only DELETE may remove],
   "links": [{"file_id", "expires", "sig", "kid"}],
   "stream_links": [{"run_id", "expires", "sig", "kid"} of finished runs],
   "outputs": [{"run_id", "key"}: the output keys of finished runs], "assets": [playground asset names],
   "graph": {"nodes", "edges"} of a valid workflow whose first node is its User Input}
A live run's stream would last as long as the slow call, so live runs are only read, listed,
cancelled (the first cancel ends one) and deleted, never streamed or re-run, and the live workflow
is never started here: runs it started would be live too, and schemathesis reuses ids it saw in
answers.
"""

import json
import os
import zlib
from urllib.parse import quote

import schemathesis
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.modes import GenerationMode

with open(os.environ["WRS_ST_FIXTURES"], encoding="utf-8") as fd:
    FIXTURES = json.load(fd)


# The live runs no cancel has named yet (map_case hands them to valid cancels one by one).
LIVE_TO_CANCEL = list(FIXTURES["live_runs"])


def pick(generated, choices):
    """One of `choices` for half (one choice) to two thirds (many) of the generated values, None for the rest."""
    if not choices:
        return None
    digest = zlib.crc32(json.dumps(generated, sort_keys=True, default=str).encode("utf-8"))
    index = digest % (len(choices) * 3 // 2 + 1)
    return choices[index] if index < len(choices) else None


def positive(case, location):
    """Whether the case's component at `location` was generated to be valid."""
    meta = case.meta
    if meta is None:
        return True
    component = meta.components.get(location)
    mode = component.mode if component is not None else meta.generation.mode
    return mode == GenerationMode.POSITIVE


def workflow_refs():
    """Every way to name a published workflow: its id and its slug."""
    return [ref for wf in FIXTURES["workflows"] for ref in (wf["id"], wf["slug"])]


def fit_request_line(query, budget, negative):
    """Makes the URL encoding of `query`'s strings (nested dicts too) fit `budget`, if it can.

    First every character past ASCII becomes `~` (one byte where it was up to twelve): a string
    keeps its length in code points, which is what maxLength counts, and an invalid one stays
    invalid (no id, time or enum has a `~`). Then, in a positive case only, the longest string is
    halved until it fits. A negative case is never cut: halving a 520-character metadata value
    made it valid and the server's 200 looked like an invalid request accepted (ST201). A negative
    case still too long is refused with 431 before any route, which schemathesis.toml counts as a
    refusal.
    """
    def strings(node, path=()):
        for key, value in node.items():
            if isinstance(value, dict):
                yield from strings(value, path + (key,))
            elif isinstance(value, str):
                yield path + (key,), value

    def replace(path, value):
        node = query
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    def fits():
        return sum(len(quote(str(path[-1]))) + len(quote(value)) for path, value in strings(query)) <= budget

    for path, value in list(strings(query)):
        if not value.isascii():
            replace(path, "".join(c if c.isascii() else "~" for c in value))
    while not negative and not fits():
        path, value = max(strings(query), key=lambda kv: len(kv[1]), default=((), ""))
        if not value:
            return
        replace(path, value[: len(value) // 2])


@schemathesis.hook
def map_case(context, case):
    operation = case.operation.label  # "METHOD /path"
    path_ok = positive(case, ParameterLocation.PATH)
    query_ok = positive(case, ParameterLocation.QUERY)

    if "runId" in case.path_parameters and path_ok:
        # A stream of a live run lasts as long as its slow call, and so does a re-run of one (a
        # cancelled live run re-runs into a new live run, which a `stream` or `Prefer: wait` re-run
        # then holds its request for): both only ever name finished runs.
        holds = operation in ("GET /api/v1/runs/{runId}/stream", "POST /api/v1/runs/{runId}/rerun")
        if (
            operation == "POST /api/v1/runs/{runId}/cancel"
            and LIVE_TO_CANCEL
            and positive(case, ParameterLocation.HEADER)
        ):
            # Each live run answers its first cancel 202 and every later one 409: the first valid
            # cases take them in turn, so a cancel that ends a run is always among them (picked by
            # the generated value, repeated values landed on finished runs alone: 409×11, no 202).
            run_id = LIVE_TO_CANCEL.pop(0)
        elif operation == "DELETE /api/v1/runs/{runId}":
            # Only the test's deletable runs, else an id of no run: a deleted fixture run would answer
            # 404 to every operation after it (its output pages and stream links too).
            run_id = pick(case.path_parameters["runId"], FIXTURES["deletable_runs"]) or "run_01J00000000000000000000000"
        else:
            run_id = pick(case.path_parameters["runId"], FIXTURES["runs"] + ([] if holds else FIXTURES["live_runs"]))
        if run_id:
            case.path_parameters["runId"] = run_id
        elif holds and case.path_parameters["runId"] in FIXTURES["live_runs"]:
            # An id schemathesis picked up from an earlier answer: a finished run instead.
            case.path_parameters["runId"] = FIXTURES["runs"][0]

    # A stateful case's workflow and version come together from a publish answer (the 201's links).
    linked = case.meta is not None and case.meta.phase.name == TestPhase.STATEFUL
    if operation == "GET /api/v1/runs/{runId}/outputs/{key}" and path_ok and not linked:
        # An output key means something only with its run: the two together (a generated key is
        # almost never one). A valid query's generated `starting_after` names no item of it (400,
        # D31): dropped, `limit` stays.
        output = pick([case.path_parameters, case.query], FIXTURES["outputs"])
        if output:
            case.path_parameters["runId"] = output["run_id"]
            case.path_parameters["key"] = output["key"]
            if query_ok and case.query:
                case.query.pop("starting_after", None)

    if operation == "GET /api/v1/workflows/{workflowId}" and path_ok and not linked:
        ref = pick(case.path_parameters.get("workflowId"), workflow_refs())
        if ref:
            case.path_parameters["workflowId"] = ref
            wf = next(w for w in FIXTURES["workflows"] if ref in (w["id"], w["slug"]))
            if query_ok and case.query and "version" in case.query:
                # Always a version of the workflow swapped in: a stateful case carries the version
                # its link took from a publish answer, which names another workflow.
                versions = [wf["version"], wf["version_id"]]
                case.query["version"] = str(versions[zlib.crc32(str(case.query["version"]).encode("utf-8")) % 2])

    if operation == "GET /api/v1/files/{fileId}" and path_ok:
        file_id = pick(case.path_parameters.get("fileId"), FIXTURES["files"])
        if file_id:
            case.path_parameters["fileId"] = file_id

    if operation == "DELETE /api/v1/files/{fileId}" and path_ok:
        # Only the test's deletable uploads, else an id of no file: an upload schemathesis made itself
        # must stay, since its stateful check reads back what a POST created (ST302), and the other
        # operations' fixture files must stay for them.
        file_id = pick(case.path_parameters.get("fileId"), FIXTURES["deletable_files"])
        case.path_parameters["fileId"] = file_id or "file_01J00000000000000000000000"

    if operation == "DELETE /api/v1/workflows/{workflowId}" and path_ok:
        # The same for workflows: the fixtures' are started, read and re-run by the other operations,
        # and one schemathesis published must stay for its stateful reads (ST302).
        workflow_id = pick(case.path_parameters.get("workflowId"), FIXTURES["deletable_workflows"])
        case.path_parameters["workflowId"] = workflow_id or "wf_01J00000000000000000000000"

    if operation == "GET /files/{fileId}/content" and path_ok and query_ok:
        # The signature covers the id, the expiry and the key id (D19), so the four travel together;
        # Range stays generated.
        link = pick([case.path_parameters.get("fileId"), case.query], FIXTURES["links"])
        if link:
            case.path_parameters["fileId"] = link["file_id"]
            case.query = {**(case.query or {}), "expires": link["expires"], "sig": link["sig"], "kid": link["kid"]}

    if operation == "GET /streams/{runId}" and path_ok and query_ok:
        # A stream link (D34) the same way. A generated `starting_after` is almost never a cursor of
        # that run (400, D11): dropped, as an output page's is (2xx: 2 of 76 such cases before).
        link = pick([case.path_parameters.get("runId"), case.query], FIXTURES["stream_links"])
        if link:
            case.path_parameters["runId"] = link["run_id"]
            query = {k: v for k, v in (case.query or {}).items() if k != "starting_after"}
            case.query = {**query, "expires": link["expires"], "sig": link["sig"], "kid": link["kid"]}

    if operation.startswith("POST /codec/{token}/") and path_ok:
        # D32: the operators' token in the path (the browser form) on most cases; the rest are refused
        # (401). The header form gets it from schemathesis.toml, as the other operations get the key.
        if pick([operation, case.body], [True]):
            case.path_parameters["token"] = os.environ["WRS_ST_CODEC"]

    if operation == "GET /playground/{asset}" and path_ok:
        asset = pick(case.path_parameters.get("asset"), FIXTURES["assets"])
        if asset:
            case.path_parameters["asset"] = asset

    if operation == "GET /api/v1/runs" and case.query:
        # The server reads at most 16 KiB of request line and headers (431 before any route, proven in
        # test/api/server.test.ts); a generated filter list past it would test that limit, not this route.
        fit_request_line(case.query, 12_000, negative=not query_ok)

    if operation == "GET /api/v1/runs" and query_ok and case.query:
        if "workflowId" in case.query:
            ref = pick(case.query["workflowId"], workflow_refs())
            if ref:
                case.query["workflowId"] = ref
        if "starting_after" in case.query:
            run_id = pick(case.query["starting_after"], FIXTURES["runs"])
            if run_id:
                case.query["starting_after"] = run_id

    if operation == "POST /api/v1/responses" and positive(case, ParameterLocation.BODY) and isinstance(case.body, dict):
        wf = pick(case.body, [w for w in FIXTURES["workflows"] if not w["live"]])
        if wf:
            # A webhook to a generated host would be retried for a day after the test: never sent here.
            body = {"workflowId": wf["id"] if len(str(case.body.get("workflowId"))) % 2 else wf["slug"], "inputs": wf["inputs"]}
            if "stream" in case.body:
                body["stream"] = case.body["stream"]
            if "version" in case.body:
                version = pick(case.body["version"], [wf["version"], wf["version_id"]])
                if version is not None:
                    body["version"] = version
            case.body = body
    if operation == "POST /api/v1/workflows" and positive(case, ParameterLocation.BODY) and isinstance(case.body, dict):
        if pick(case.body, [True]):
            # The generated slug, name, description, public flag and meta stay; the generated name
            # also labels the input, so odd labels meet the D3 key normalization.
            nodes = [dict(node) for node in FIXTURES["graph"]["nodes"]]
            if case.body.get("name"):
                nodes[0]["label"] = case.body["name"]
            case.body = {**case.body, "nodes": nodes, "edges": FIXTURES["graph"]["edges"]}
    return case
