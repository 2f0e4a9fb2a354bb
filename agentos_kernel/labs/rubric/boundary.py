"""Runtime boundary: tool / provider / skill / hook / schema / event responsibilities separated.

Static analysis of runtime/ (Python with `ast`; Go and TypeScript by file-level patterns):

1. each responsibility has its own module, told by the module's name (or its folder's):
   tool (tool, mcp, dispatch), provider (provider, llm), skill, hook, schema, event
   (event, store); one module named for two responsibilities mixes them;
2. (Python) a responsibility's central definition lives in its module: EventStore*,
   SchemaRegistry, Hook*, Skill*, *Provider, dispatch_tool / ToolDef / ToolRegistry / MCP*;
3. no side effect outside the tool, provider and event-store modules: file writes (open for
   w/a/x/+, write_text, mkdir, unlink, os.remove, shutil ...), processes (subprocess,
   os.system ...) and network (socket, urllib, http.client, requests, httpx, aiohttp) there
   bypass tool dispatch and the audit log (the spec's first anti-pattern). Reading files is
   not flagged: loading schemas, skills and role prompts is what I-4 asks for.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from .model import CriterionResult, fail
from .submission import LANG_SUFFIXES, SubmissionFileError, files, read_text

KEY = "runtime_boundary"
RESPONSIBILITIES: dict[str, tuple[str, ...]] = {
    "tool": ("tool", "mcp", "dispatch"), "provider": ("provider", "llm"), "skill": ("skill",),
    "hook": ("hook",), "schema": ("schema",), "event": ("event", "store"),
}
SUGGESTED = {"tool": "runtime/mcp.py", "provider": "runtime/provider.py", "skill": "runtime/skills.py",
             "hook": "runtime/hooks.py", "schema": "runtime/schema.py", "event": "runtime/event_store.py"}
SIDE_EFFECTS_ALLOWED = frozenset({"tool", "provider", "event"})
PROCESS_MODULES = frozenset({"subprocess", "multiprocessing", "pty"})
NETWORK_MODULES = frozenset({"socket", "urllib.request", "http.client", "requests", "httpx", "aiohttp",
                             "urllib3", "ftplib", "smtplib"})
WRITE_METHODS = frozenset({"write_text", "write_bytes", "mkdir", "unlink", "rmdir", "touch", "rename",
                           "symlink_to", "hardlink_to"})
OS_CALLS = {"remove": "write", "unlink": "write", "rename": "write", "replace": "write", "makedirs": "write",
            "mkdir": "write", "rmdir": "write", "removedirs": "write", "truncate": "write",
            "system": "process", "popen": "process", "fork": "process", "execv": "process",
            "execvp": "process", "execve": "process", "spawnv": "process", "posix_spawn": "process"}
TEXT_PATTERNS = {
    "go": ((r"\bos\.(WriteFile|Create|Remove|RemoveAll|Mkdir|MkdirAll|Rename|OpenFile)\(", "write"),
           (r"\bexec\.Command", "process"),
           (r"\bnet\.(Dial|Listen)|\bhttp\.(Get|Post|NewRequest)\(", "network")),
    "typescript": ((r"\b(writeFileSync|writeFile|appendFileSync|appendFile|mkdirSync|rmSync|unlinkSync|"
                    r"renameSync|createWriteStream)\(", "write"),
                   (r"child_process|\b(spawn|execSync|execFile)\(", "process"),
                   (r"\bfetch\(|\bhttps?\.request\(|\bnet\.connect\(|new WebSocket\(", "network")),
}
WHAT = {"write": "writes a file", "process": "starts a process", "network": "uses the network"}


def responsibilities_of(rel: str) -> set[str]:
    """The responsibilities a runtime module's name (stem and folders below runtime/) claims."""
    parts = [p.lower() for p in Path(rel).with_suffix("").parts[1:]]
    return {r for r, words in RESPONSIBILITIES.items() if any(w in p for p in parts for w in words)}


def owner_of(name: str, is_class: bool) -> str | None:
    """The responsibility a top-level definition's name belongs to (Python), if any."""
    if not is_class:
        return "tool" if name == "dispatch_tool" else None
    if "EventStore" in name:
        return "event"
    if name.endswith("SchemaRegistry"):
        return "schema"
    if name.startswith("Hook"):
        return "hook"
    if name.startswith("Skill"):
        return "skill"
    if name.endswith("Provider"):
        return "provider"
    if name in ("ToolDef", "ToolRegistry") or name.startswith(("MCP", "Mcp")):
        return "tool"
    return None


def check(root: Path, lang: str) -> CriterionResult:
    """The runtime boundary criterion for the submission at `root`."""
    sources = list(files(root, "runtime", LANG_SUFFIXES.get(lang, (".py",))))
    if not sources:
        return fail(KEY, ["runtime/: no source files; put the runtime in runtime/, one module per "
                          "responsibility (event_store, schema, mcp, provider, skills, hooks, agents)"])
    problems: list[str] = []
    notes: list[str] = []
    found: dict[str, list[str]] = {r: [] for r in RESPONSIBILITIES}
    for rel in sources:
        claims = responsibilities_of(rel)
        if len(claims) > 1:
            problems.append(f"{rel}: one module named for {' and '.join(sorted(claims))}; give each "
                            "responsibility its own module")
        for r in claims:
            found[r].append(rel)
        try:
            text = read_text(root, rel)
        except SubmissionFileError as exc:
            problems.append(str(exc))
            continue
        if lang == "python":
            problems += _python_module(rel, text, claims)
        else:
            problems += _text_module(rel, text, claims, lang)
    missing = [r for r, mods in found.items() if not mods]
    problems = [f"no {r} module under runtime/: add {SUGGESTED[r]} for the {r} responsibility"
                for r in missing] + problems
    notes += [f"{r}: {', '.join(mods)}" for r, mods in found.items() if mods]
    if problems:
        return fail(KEY, problems, notes)
    return CriterionResult(KEY, True, f"{len(RESPONSIBILITIES)} responsibilities in their own modules; "
                           "no side effect outside tool/provider/event modules", tuple(notes))


def _python_module(rel: str, text: str, claims: set[str]) -> list[str]:
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        return [f"{rel}:{exc.lineno}: not valid Python ({exc.msg})"]
    problems = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            owner = owner_of(node.name, isinstance(node, ast.ClassDef))
            if owner and owner not in claims:
                problems.append(f"{rel}:{node.lineno}: defines {node.name} ({owner} responsibility) "
                                f"outside the {owner} module; move it to {SUGGESTED[owner]}")
    if claims & SIDE_EFFECTS_ALLOWED:
        return problems
    fix = "; do it in a tool (runtime/mcp.py) called through dispatch_tool, or in the event store"
    for line, kind, what in _python_effects(tree):
        problems.append(f"{rel}:{line}: {what} ({WHAT[kind]}){fix}")
    return problems


def _python_effects(tree: ast.AST) -> list[tuple[int, str, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                kind = ("process" if name in PROCESS_MODULES or name.split(".")[0] in PROCESS_MODULES
                        else "network" if name in NETWORK_MODULES or name.split(".")[0] in NETWORK_MODULES
                        else None)
                if kind:
                    found.append((node.lineno, kind, f"imports {name}"))
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id == "open" and _writes(node, 1):
                found.append((node.lineno, "write", "open(..., write mode)"))
            elif isinstance(f, ast.Attribute):
                base = f.value.id if isinstance(f.value, ast.Name) else None
                if f.attr == "open" and base != "os" and _writes(node, 0):
                    found.append((node.lineno, "write", ".open(write mode)"))
                elif f.attr in WRITE_METHODS and base != "os":
                    found.append((node.lineno, "write", f".{f.attr}()"))
                elif base == "os" and f.attr in OS_CALLS:
                    found.append((node.lineno, OS_CALLS[f.attr], f"os.{f.attr}()"))
                elif base == "shutil":
                    found.append((node.lineno, "write", f"shutil.{f.attr}()"))
    return sorted(found)


def _writes(call: ast.Call, mode_pos: int) -> bool:
    mode = call.args[mode_pos] if len(call.args) > mode_pos else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    if not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)):
        return False  # a mode that is not a literal string
    return any(c in mode.value for c in "wax+")


def _text_module(rel: str, text: str, claims: set[str], lang: str) -> list[str]:
    if claims & SIDE_EFFECTS_ALLOWED:
        return []
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, kind in TEXT_PATTERNS.get(lang, ()):
            m = re.search(pattern, line)
            if m:
                problems.append(f"{rel}:{n}: {m.group(0).rstrip('(')} ({WHAT[kind]}); do it in a tool "
                                "called through dispatch, or in the event store")
    return problems
