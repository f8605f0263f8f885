'use strict';
// JSON that keeps int64 exact. JSON.parse turns every number into a double, which loses
// integers above 2**53 and cannot tell the integer 1 from the float 1.0. duespec sends
// int64 times and ids up to 2**63-1 and probes with floats that must be rejected, so
// this parser reads integer literals (no fraction, no exponent) as BigInt and every
// other number as a Number. stringify writes BigInt back as plain digits.

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WHITESPACE = /[ \t\n\r]*/y;

function parse(text) {
  let at = 0;

  function fail(what) {
    throw new SyntaxError(`${what} at offset ${at}`);
  }
  function skipWhitespace() {
    WHITESPACE.lastIndex = at;
    WHITESPACE.exec(text);
    at = WHITESPACE.lastIndex;
  }
  function expect(char) {
    skipWhitespace();
    if (text[at] !== char) fail(`expected ${JSON.stringify(char)}`);
    at += 1;
  }
  function match(pattern) {
    pattern.lastIndex = at;
    const found = pattern.exec(text);
    if (found) at = pattern.lastIndex;
    return found;
  }
  function value() {
    skipWhitespace();
    const char = text[at];
    if (char === '{') return object();
    if (char === '[') return array();
    if (char === '"') {
      const found = match(STRING);
      if (!found) fail('bad string');
      return JSON.parse(found[0]);
    }
    for (const [word, meaning] of [['true', true], ['false', false], ['null', null]]) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return meaning;
      }
    }
    const found = match(NUMBER);
    if (!found) fail('unexpected character');
    const isInteger = found[1] === undefined && found[2] === undefined;
    return isInteger ? BigInt(found[0]) : Number(found[0]);
  }
  function object() {
    const result = Object.create(null); // a key named __proto__ is just a key
    expect('{');
    skipWhitespace();
    if (text[at] === '}') { at += 1; return result; }
    for (;;) {
      skipWhitespace();
      const key = value();
      if (typeof key !== 'string') fail('object key is not a string');
      expect(':');
      result[key] = value();
      skipWhitespace();
      if (text[at] === '}') { at += 1; return result; }
      expect(',');
    }
  }
  function array() {
    const result = [];
    expect('[');
    skipWhitespace();
    if (text[at] === ']') { at += 1; return result; }
    for (;;) {
      result.push(value());
      skipWhitespace();
      if (text[at] === ']') { at += 1; return result; }
      expect(',');
    }
  }

  const result = value();
  skipWhitespace();
  if (at !== text.length) fail('trailing characters');
  return result;
}

function stringify(value) {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stringify).join(',')}]`;
  const members = Object.keys(value).map((key) => `${JSON.stringify(key)}:${stringify(value[key])}`);
  return `{${members.join(',')}}`;
}

module.exports = { parse, stringify };
