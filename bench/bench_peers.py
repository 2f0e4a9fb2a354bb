"""The canonical request beside the same four-role flow on peer frameworks (run by hand).

    pip install -e ".[bench]"
    python bench/bench_peers.py [--rounds 200] [--write]

One process, interleaved rounds (each round runs every contender once, in a rotating order,
so a machine that slows down mid-run slows them all alike); the times are each contender's
median, the ratios are taken within each round (contender / peer in the same round) and
reported as the minimum and the median over the rounds. The headline peer is the lean
LangGraph graph. Contenders:

- `agentos request`: `Runtime.handle_user_request("hello, greet Ada")` on the scripted
  provider, the runtime built once: every boundary schema-checked, hooks run with their
  timeouts, payloads redacted, each event chained and written to disk (the default fsync
  policy `close`: the log, its directory and sessions/ at close); and the same with
  `fsync: never` (flush only).
- `agentos %agent`: the notebook path (`jupyter.api.run_agent`): the Runtime cached per
  workspace (its contract files stat-checked on every call), its events as appended (not read back), replayed.
- LangGraph, Pydantic AI, the OpenAI Agents SDK: the same flow (lead, planner, worker with one
  `echo` tool call, reviewer: five model calls, one tool call, JSON answers parsed) with
  each framework's own fake model, nothing persisted, no schema checks, no hooks. LangGraph
  twice: the graph as its tutorials build it (the tool in a separate `ToolNode` behind a
  conditional edge from the worker: six nodes run), and a lean graph (four nodes in a line,
  the worker node calling the tool itself), about twice as fast: the headline peer.
- LangGraph with its SQLite checkpointer (`langgraph-checkpoint-sqlite`, WAL,
  `synchronous=FULL`): the peer at the durability of our default `fsync: close` (each of its
  checkpoints committed to disk), in a second phase of its own beside our default
  `fsync: close` request (its fsyncs would disturb the in-memory rounds).
- Floors: the 32 events of the canonical log as `json.dumps` + write + flush of a file, and
  an orjson fold over them (what replay costs at the least).

Peers are optional (`[bench]` extra); a missing one is reported and skipped.
"""


import argparse
import asyncio
import itertools
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agentos_kernel import Runtime
from agentos_kernel.cli.main import main as cli_main

CANONICAL = "hello, greet Ada"
LEAD = {"intent": f"Fulfil the request: {CANONICAL}", "constraints": []}
PLAN = {"steps": [{"id": "s1", "action": "greet"}, {"id": "s2", "action": "report"}], "risks": []}
REPORT = {"output": "Hello, Ada!", "steps_completed": ["s1", "s2"]}
REVIEW = {"verdict": "pass", "reasons": ["every plan step is completed"]}


DURABLE_PEER = "LangGraph, SQLite checkpointer (synchronous=FULL)"
LEAN = "LangGraph, lean (4 nodes, tool in the worker)"
GOAL_RATIO = {"agentos request": 1 / 3, "agentos request, fsync never": 0.33, "agentos %agent": 1 / 2}
GOALS = {"agentos request": "≤ ⅓ × lean (issue 12)",
         "agentos request, fsync never": "≤ 0.33 × lean (issue 24)",
         "agentos %agent": "≤ ½ × lean (issue 12)"}


def echo(text: str) -> str:
    """Echo the text back."""
    return text


# -- agentos ------------------------------------------------------------------------------

def agentos_request(ws: Path) -> Callable[[], Any]:
    rt = Runtime.from_workspace(ws)

    def run() -> Any:
        result = rt.handle_user_request(CANONICAL)
        assert result.value.output == "Hello, Ada!"

    return run


def agentos_magic(ws: Path) -> Callable[[], Any]:
    from agentos_kernel.jupyter import api

    def run() -> Any:
        assert api.run_agent(CANONICAL, workspace=ws).output == "Hello, Ada!"

    return run


# -- LangGraph ----------------------------------------------------------------------------

def langgraph_models() -> tuple[Any, Any, Any, Any]:
    """LangChain's fake chat models for the lead, planner, worker (a tool call, then its
    report) and reviewer, answering in turn forever."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    def fake(*answers: AIMessage) -> GenericFakeChatModel:
        return GenericFakeChatModel(messages=itertools.cycle(answers))

    return (fake(AIMessage(json.dumps(LEAD))), fake(AIMessage(json.dumps(PLAN))),
            fake(AIMessage("", tool_calls=[{"name": "echo", "args": {"text": "Hello, Ada!"}, "id": "t1"}]),
                 AIMessage(json.dumps(REPORT))),
            fake(AIMessage(json.dumps(REVIEW))))


def json_node(model: Any, system: str, read: Callable[[Any], str], key: str) -> Callable[[Any], Any]:
    """A graph node that asks `model` (the system prompt, then `read(state)`) and stores its
    JSON answer under `key`."""
    from langchain_core.messages import HumanMessage, SystemMessage

    def node(s: Any) -> Any:
        return {key: json.loads(model.invoke([SystemMessage(system), HumanMessage(read(s))]).content)}

    return node


def langgraph_flow(checkpoints: Path | None = None) -> Callable[[], Any]:
    """LangGraph's graph; with `checkpoints`, compiled with its SQLite checkpointer writing
    that file (each run a new thread, as each of our requests is a new session)."""
    import uuid
    from typing import Annotated, TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode

    lead, planner, worker, reviewer = langgraph_models()

    class State(TypedDict, total=False):
        prompt: str
        directive: dict[str, Any]
        plan: dict[str, Any]
        messages: Annotated[list[Any], add_messages]
        report: dict[str, Any]
        verdict: dict[str, Any]

    lead_node = json_node(lead, "You are the lead.", lambda s: s["prompt"], "directive")

    def planner_node(s: State) -> State:
        r = planner.invoke([SystemMessage("You are the planner."), HumanMessage(json.dumps(s["directive"]))])
        return {"plan": json.loads(r.content),
                "messages": [SystemMessage("You are the worker."), HumanMessage(r.content)]}

    def worker_node(s: State) -> State:
        r = worker.invoke(s["messages"])
        return {"messages": [r]} if r.tool_calls else {"messages": [r], "report": json.loads(r.content)}

    reviewer_node = json_node(reviewer, "You are the reviewer.", lambda s: json.dumps(s["report"]), "verdict")

    g = StateGraph(State)
    for name, fn in (("lead", lead_node), ("planner", planner_node), ("worker", worker_node),
                     ("reviewer", reviewer_node)):
        g.add_node(name, fn)
    g.add_node("tools", ToolNode([tool(echo)]))
    g.add_edge(START, "lead")
    g.add_edge("lead", "planner")
    g.add_edge("planner", "worker")
    g.add_conditional_edges("worker", lambda s: "reviewer" if "report" in s else "tools")
    g.add_edge("tools", "worker")
    g.add_edge("reviewer", END)
    saver = None
    if checkpoints is not None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(checkpoints, check_same_thread=False)
        # WAL (the saver's own setting) with synchronous=FULL: every commit fsyncs the WAL,
        # so a checkpoint survives a power cut, as our `fsync: close` log does at close.
        conn.execute("PRAGMA synchronous=FULL")
        saver = SqliteSaver(conn)
    graph = g.compile(checkpointer=saver)

    def run() -> Any:
        config = {"configurable": {"thread_id": uuid.uuid4().hex}} if saver else None
        out = graph.invoke({"prompt": CANONICAL}, config)
        assert out["report"]["output"] == "Hello, Ada!" and out["verdict"]["verdict"] == "pass"

    return run


def langgraph_lean() -> Callable[[], Any]:
    """The same flow as a leaner LangGraph graph: four nodes in a line, the worker calling
    its tool itself (no ToolNode, no conditional edge), as a hand-written graph would."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph

    lead, planner, worker, reviewer = langgraph_models()
    echo_tool = tool(echo)

    class State(TypedDict, total=False):
        prompt: str
        directive: dict[str, Any]
        plan: str
        report: dict[str, Any]
        verdict: dict[str, Any]

    lead_node = json_node(lead, "You are the lead.", lambda s: s["prompt"], "directive")

    def planner_node(s: State) -> State:
        r = planner.invoke([SystemMessage("You are the planner."), HumanMessage(json.dumps(s["directive"]))])
        json.loads(r.content)
        return {"plan": r.content}

    def worker_node(s: State) -> State:
        messages: list[Any] = [SystemMessage("You are the worker."), HumanMessage(s["plan"])]
        r = worker.invoke(messages)
        while r.tool_calls:
            messages.append(r)
            for call in r.tool_calls:
                messages.append(ToolMessage(echo_tool.invoke(call["args"]), tool_call_id=call["id"]))
            r = worker.invoke(messages)
        return {"report": json.loads(r.content)}

    reviewer_node = json_node(reviewer, "You are the reviewer.", lambda s: json.dumps(s["report"]), "verdict")

    g = StateGraph(State)
    nodes = (("lead", lead_node), ("planner", planner_node), ("worker", worker_node),
             ("reviewer", reviewer_node))
    for name, fn in nodes:
        g.add_node(name, fn)
    for a, b in zip([START, *(n for n, _ in nodes)], [*(n for n, _ in nodes), END], strict=True):
        g.add_edge(a, b)
    graph = g.compile()

    def run() -> Any:
        out = graph.invoke({"prompt": CANONICAL})
        assert out["report"]["output"] == "Hello, Ada!" and out["verdict"]["verdict"] == "pass"

    return run


# -- Pydantic AI --------------------------------------------------------------------------

def pydantic_ai_flow() -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    def answer(doc: dict[str, Any]) -> FunctionModel:
        return FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart(json.dumps(doc))]))

    def worker_model(messages: list[Any], info: Any) -> ModelResponse:
        returned = any(isinstance(p, ToolReturnPart) for m in messages for p in getattr(m, "parts", ()))
        if returned:
            return ModelResponse(parts=[TextPart(json.dumps(REPORT))])
        return ModelResponse(parts=[ToolCallPart("echo", {"text": "Hello, Ada!"}, tool_call_id="t1")])

    lead = Agent(answer(LEAD), system_prompt="You are the lead.")
    planner = Agent(answer(PLAN), system_prompt="You are the planner.")
    worker = Agent(FunctionModel(worker_model), system_prompt="You are the worker.")
    worker.tool_plain(echo)
    reviewer = Agent(answer(REVIEW), system_prompt="You are the reviewer.")

    def run() -> Any:
        directive = json.loads(lead.run_sync(CANONICAL).output)
        plan = planner.run_sync(json.dumps(directive)).output
        report = json.loads(worker.run_sync(plan).output)
        verdict = json.loads(reviewer.run_sync(json.dumps(report)).output)
        assert report["output"] == "Hello, Ada!" and verdict["verdict"] == "pass"

    return run


# -- OpenAI Agents SDK --------------------------------------------------------------------

def openai_agents_flow() -> Callable[[], Any]:
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from agents import Agent, Runner, Usage, function_tool, set_tracing_disabled

    set_tracing_disabled(True)  # tracing would export over the network

    def message(doc: dict[str, Any]) -> ResponseOutputMessage:
        return ResponseOutputMessage(id="m", role="assistant", status="completed", type="message",
                                     content=[ResponseOutputText(text=json.dumps(doc), type="output_text",
                                                                 annotations=[])])

    class Fake(Model):
        def __init__(self, doc: dict[str, Any], tool_first: bool = False) -> None:
            self.doc, self.tool_first = doc, tool_first

        async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                               **kwargs: Any) -> ModelResponse:
            returned = isinstance(input, list) and any(
                (i.get("type") if isinstance(i, dict) else getattr(i, "type", None)) == "function_call_output"
                for i in input)
            if self.tool_first and not returned:
                out: list[Any] = [ResponseFunctionToolCall(arguments=json.dumps({"text": "Hello, Ada!"}),
                                                           call_id="t1", name="echo", type="function_call")]
            else:
                out = [message(self.doc)]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    lead = Agent(name="lead", instructions="You are the lead.", model=Fake(LEAD))
    planner = Agent(name="planner", instructions="You are the planner.", model=Fake(PLAN))
    worker = Agent(name="worker", instructions="You are the worker.", model=Fake(REPORT, tool_first=True),
                   tools=[function_tool(echo)])
    reviewer = Agent(name="reviewer", instructions="You are the reviewer.", model=Fake(REVIEW))

    async def flow() -> None:
        directive = json.loads((await Runner.run(lead, CANONICAL)).final_output)
        plan = (await Runner.run(planner, json.dumps(directive))).final_output
        report = json.loads((await Runner.run(worker, plan)).final_output)
        verdict = json.loads((await Runner.run(reviewer, json.dumps(report))).final_output)
        assert report["output"] == "Hello, Ada!" and verdict["verdict"] == "pass"

    loop = asyncio.new_event_loop()
    return lambda: loop.run_until_complete(flow())


# -- floors -------------------------------------------------------------------------------

def floors(log: Path, tmp: Path) -> dict[str, Callable[[], Any]]:
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    raw = log.read_bytes().splitlines()

    def write_flush() -> None:
        with (tmp / "floor.jsonl").open("w") as f:
            for d in lines:
                f.write(json.dumps(d) + "\n")
                f.flush()

    def fold() -> None:
        n = 0
        for line in raw:
            n += len(orjson.loads(line)["payload"])

    return {"floor: 32 events json.dumps+write+flush": write_flush, "floor: orjson fold of 32 events": fold}


def workspaces(tmp: Path) -> tuple[Path, Path]:
    """A demo workspace under `tmp` (the default `fsync: close`, its first session run) and a
    copy of it at `fsync: never` (flush only)."""
    ws = tmp / "ws"
    with open(os.devnull, "w") as null:
        stdout, sys.stdout = sys.stdout, null
        try:
            cli_main(["init", str(ws)])
            cli_main(["--workspace", str(ws), "demo"])
        finally:
            sys.stdout = stdout
    nosync = tmp / "ws-nosync"
    shutil.copytree(ws, nosync)
    config = nosync / "agentos.yaml"
    config.write_text(config.read_text().replace("    model: scripted-1\n",
                                                 "    model: scripted-1\n    fsync: never\n", 1))
    return ws, nosync


def rounds(contenders: dict[str, Callable[[], Any]], n: int, what: str) -> dict[str, list[float]]:
    """Each contender's ms in each of `n` interleaved rounds (the order rotating each
    round), after three warm-up calls each."""
    for fn in contenders.values():  # warm up: imports, caches, first compiles
        for _ in range(3):
            fn()
    times: dict[str, list[float]] = {k: [] for k in contenders}
    names = list(contenders)
    for r in range(n):
        for name in names[r % len(names):] + names[: r % len(names)]:
            if (setup := getattr(contenders[name], "setup", None)) is not None:
                setup()  # untimed: what the contender needs before each call
            t = time.perf_counter()
            contenders[name]()
            times[name].append((time.perf_counter() - t) * 1000)
        if r % 50 == 49:
            print(f"  {what}: {r + 1}/{n} rounds", file=sys.stderr)
    return times


def per_round(times: dict[str, list[float]], top: str, base: str) -> tuple[float, float]:
    """(min, median) over the rounds of `top`'s time / `base`'s time in the same round."""
    ratios = [a / b for a, b in zip(times[top], times[base], strict=True)]
    return min(ratios), statistics.median(ratios)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                     if ln.startswith("model name"))
        cpu = model
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200, help="interleaved rounds (default 200)")
    ap.add_argument("--write", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="agentos-bench-"))
    ws, nosync = workspaces(tmp)
    contenders: dict[str, Callable[[], Any]] = {"agentos request": agentos_request(ws),
                                                "agentos request, fsync never": agentos_request(nosync),
                                                "agentos %agent": agentos_magic(ws)}
    for name, make in ((LEAN, langgraph_lean), ("LangGraph", langgraph_flow),
                       ("Pydantic AI", pydantic_ai_flow), ("OpenAI Agents SDK", openai_agents_flow)):
        try:
            contenders[name] = make()
        except ImportError as exc:
            print(f"skipped {name}: {exc} (pip install -e '.[bench]')", file=sys.stderr)
    contenders.update(floors(ws / "sessions" / "s0001" / ".events.jsonl", tmp))
    load = Path("/proc/loadavg").read_text().split()[:3]
    times = rounds(contenders, args.rounds, "in-memory peers")
    med = {k: statistics.median(v) for k, v in times.items()}
    ours, peer = med["agentos request"], LEAN if LEAN in med else None
    rows = []
    for k, v in med.items():
        lo, mid = per_round(times, k, peer) if peer else (0.0, 0.0)
        vs_peer = f"{lo:.2f}× / {mid:.2f}×" if peer else "-"
        vs_tool = f"{per_round(times, k, 'LangGraph')[1]:.2f}×" if "LangGraph" in med else "-"
        goal = GOALS.get(k, "")
        met = "" if not (goal and peer) else (" ✓" if mid <= GOAL_RATIO[k] else " ✗")
        rows.append(f"| {k} | {v:.3f} | {v / ours:.2f}× | {vs_peer} | {vs_tool} | {goal}{met} |")
    table = "\n".join([f"Machine: {machine()}; {args.rounds} interleaved rounds; ms: medians; ratios "
                       f"taken within each round, min / median over the rounds; load average "
                       f"{' '.join(load)} at the start.", "",
                       "| contender | ms per request | × agentos request | × lean LangGraph (min / median) "
                       "| × LangGraph with ToolNode (median) | goal |",
                       "|---|---|---|---|---|---|", *rows])
    # At equal durability, in a phase of its own: the SQLite checkpointer's fsyncs would
    # otherwise land in the middle of the in-memory contenders' rounds.
    try:
        durable = {"agentos request (fsync: close)": agentos_request(ws),
                   DURABLE_PEER: langgraph_flow(tmp / "checkpoints.sqlite")}
    except ImportError as exc:
        print(f"skipped {DURABLE_PEER}: {exc} (pip install -e '.[bench]')", file=sys.stderr)
    else:
        dmed = {k: statistics.median(v) for k, v in rounds(durable, args.rounds, "durable peer").items()}
        base = dmed[DURABLE_PEER]
        ratio = dmed["agentos request (fsync: close)"] / base
        table += "\n".join(["", "", "Each request durable on disk when it returns:", "",
                            "| contender | ms per request | × durable LangGraph | goal (issue 12) |",
                            "|---|---|---|---|",
                            *(f"| {k} | {v:.3f} | {v / base:.2f}× | "
                              + ("" if k == DURABLE_PEER else
                                 f"≤ ⅓ × durable LangGraph {'✓' if ratio <= 1 / 3 else '✗'}") + " |"
                              for k, v in dmed.items())])
    print(table)
    if args.write:
        with (Path(__file__).parent / "RESULTS.md").open("a", encoding="utf-8") as f:
            f.write(f"\n## Peers ({time.strftime('%Y-%m-%d')}, bench/bench_peers.py)\n\n{table}\n")


if __name__ == "__main__":
    main()
