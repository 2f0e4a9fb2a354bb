"""`python -m runtime "hello, greet Ada"`: run one request through your runtime.

Part 1 of the handout: replace this with your runtime's entry point (it writes
sessions/<id>/.events.jsonl and, with --snapshot, the replay snapshot).
"""

import sys


def main(argv: list[str]) -> int:
    print("runtime: not written yet; the handout (README.md of the lab) says what goes here",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
