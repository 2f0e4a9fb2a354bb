#!/usr/bin/env node
// Recompute the hash chain of an agentos .events.jsonl in plain Node (no npm packages):
// proof that the chain is defined byte for byte (docs/log-format.md), not by Python.
//
//   node verify_chain.mjs LOG                exit 0 chain verified, 1 a mismatch, 2 bad input
//   node verify_chain.mjs --canonical FILE   print each JSON line of FILE in canonical form
//
// chain(event) = sha256_hex( previous chain as ASCII hex ("" for the first event)
//                            + canonical(event without its "chain" member) )
// canonical = orjson.dumps(obj, option=OPT_SORT_KEYS): UTF-8, no whitespace, keys sorted by
// code point, strings escaped like JSON.stringify, numbers as below. JSON.parse cannot be
// used as is: it forgets whether a number was written 0 or 0.0, and orjson keeps the
// difference (int vs float), so this parser keeps each number's source text.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

class Num {
  constructor(text) { this.text = text; }
}

function parse(src) {
  let i = 0;
  const ws = () => { while (i < src.length && " \t\n\r".includes(src[i])) i++; };
  const fail = (what) => { throw new SyntaxError(`${what} at char ${i}`); };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  function value() {
    ws();
    const c = src[i];
    if (c === "{") {
      i++; const obj = new Map(); ws();
      if (src[i] === "}") { i++; return obj; }
      for (;;) {
        ws(); if (src[i] !== '"') fail("expected a key");
        const k = string(); ws();
        if (src[i++] !== ":") fail("expected ':'");
        obj.set(k, value()); ws();   // a repeated key keeps its last value, as in orjson
        if (src[i] === ",") { i++; continue; }
        if (src[i++] === "}") return obj;
        fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++; const arr = []; ws();
      if (src[i] === "]") { i++; return arr; }
      for (;;) {
        arr.push(value()); ws();
        if (src[i] === ",") { i++; continue; }
        if (src[i++] === "]") return arr;
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return string();
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (src.startsWith(word, i)) { i += word.length; return v; }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(src);
    if (!m) fail("unexpected character");
    i += m[0].length;
    return new Num(m[0]);
  }
  function string() {
    const start = i++;
    while (src[i] !== '"') {
      if (i >= src.length) fail("unterminated string");
      i += src[i] === "\\" ? 2 : 1;
    }
    i++;
    return JSON.parse(src.slice(start, i));  // escapes decoded exactly as JSON defines them
  }
  const v = value(); ws();
  if (i !== src.length) fail("trailing characters");
  return v;
}

// orjson reads a JSON integer into a 64-bit int when it fits (else a float) and writes it
// back as plain digits; it reads anything with '.', 'e' or 'E' as a double and writes the
// shortest digits that round-trip (the same digits as JS's toExponential()), in fixed
// notation when the decimal exponent e is in -5 <= e < 16 (always with a '.': 1.0, 0.00001),
// else as d[.ddd]e+XX / e-XX.
function number(text) {
  if (!/[.eE]/.test(text)) {
    const n = BigInt(text);
    if (n >= -(2n ** 63n) && n < 2n ** 64n) return n.toString();
  }
  const x = Number(text);
  if (!Number.isFinite(x)) throw new RangeError(`number ${text} is not a finite double`);
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const sign = x < 0 ? "-" : "";
  const [mant, exp] = Math.abs(x).toExponential().split("e");
  const digits = mant.replace(".", "");
  const e = Number(exp);
  if (e >= -5 && e < 16) {
    if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`;
    const whole = digits.slice(0, e + 1).padEnd(e + 1, "0");
    return `${sign}${whole}.${digits.slice(e + 1) || "0"}`;
  }
  const frac = digits.length > 1 ? `.${digits.slice(1)}` : "";
  return `${sign}${digits[0]}${frac}e${e > 0 ? "+" : "-"}${Math.abs(e)}`;
}

const utf8 = (s) => Buffer.from(s, "utf8");
const byCodePoint = (a, b) => Buffer.compare(utf8(a), utf8(b));  // UTF-8 order = code point order

export function canonical(v) {
  if (v === null) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (v instanceof Num) return number(v.text);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  const keys = [...v.keys()].sort(byCodePoint);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v.get(k))}`).join(",")}}`;
}

export function chainOf(prev, event) {
  const body = new Map(event);
  body.delete("chain");
  return createHash("sha256").update(utf8(prev ?? "")).update(utf8(canonical(body))).digest("hex");
}

function lines(file) {
  return readFileSync(file, "utf8").split("\n").map((text, n) => [n + 1, text])
    .filter(([, text]) => text.trim() !== "");
}

function verify(file) {
  let prev = null, chained = 0, events = 0, bad = 0;
  for (const [n, text] of lines(file)) {
    const ev = parse(text);
    if (!(ev instanceof Map)) throw new SyntaxError(`line ${n} is not a JSON object`);
    events++;
    const seq = ev.get("seq") instanceof Num ? ev.get("seq").text : String(events);
    const recorded = ev.get("chain");
    if (recorded === undefined) continue;
    chained++;
    if (chainOf(prev, ev) !== recorded) {
      bad++;
      console.log(`${file}:${n}: seq ${seq}: chain mismatch: this line, or the one before it, ` +
                  "was edited, dropped or reordered");
    }
    prev = recorded;  // check each line against what its predecessor recorded
  }
  if (chained > 0 && chained < events) {
    console.log(`${file}: ${events - chained} of ${events} events have no chain`);
    bad++;
  }
  if (bad === 0) console.log(`ok: ${file}: ${events} events, ${chained} chained, chain verified`);
  return bad === 0 ? 0 : 1;
}

function main(argv) {
  try {
    if (argv[0] === "--canonical" && argv.length === 2) {
      for (const [, text] of lines(argv[1])) console.log(canonical(parse(text)));
      return 0;
    }
    if (argv.length === 1 && !argv[0].startsWith("--")) return verify(argv[0]);
    console.error("usage: node verify_chain.mjs LOG | --canonical FILE");
    return 2;
  } catch (err) {
    console.error(`verify_chain: error: ${err.message}`);
    return 2;
  }
}

process.exitCode = main(process.argv.slice(2));
