#!/usr/bin/env node
'use strict';
// A duebook (docs/operations.md, "duebook") in plain JavaScript, served over duespec's
// stdio protocol (docs/protocol.md). Written from the documentation alone, as an outside
// implementation would be: it shares no code with duespec.
//
// Run the conformance campaign against it:
//   duespec conform duebook --target "stdio:node examples/node-duebook/duebook.js"

const readline = require('node:readline');
const { parse, stringify } = require('./json64.js');

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

// Integers arrive as BigInt (json64.js); a Number is a float or out of reach, never an int.
const isInt64 = (value) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX;
const isTime = (value) => isInt64(value) && value >= 0n;
const isName = (value) => typeof value === 'string' && value !== '';

const byKeys = (...keys) => (a, b) => {
  for (const key of keys) {
    if (a[key] !== b[key]) return a[key] < b[key] ? -1 : 1;
  }
  return 0;
};

const ok = (value) => ({ ok: value });
const error = (code) => ({ error: code });

class Book {
  constructor(maxOpen) {
    this.maxOpen = maxOpen;
    this.nextId = 1n; // ids start at 1 and are never reused
    this.open = new Map(); // id -> deferral; consumed deferrals are deleted, not archived
  }

  // [due_at, expires_at), and expires_at 0 means the window never closes.
  isClaimable(deferral, now) {
    return deferral.due_at <= now && (deferral.expires_at === 0n || now < deferral.expires_at);
  }

  isExpirable(deferral, now) {
    return deferral.expires_at !== 0n && now >= deferral.expires_at;
  }

  allocateId() {
    const id = this.nextId;
    this.nextId += 1n;
    return id;
  }

  schedule({ owner, delay, ttl }, now) {
    if (!isName(owner) || !isTime(delay) || !isTime(ttl) || !isTime(now)) return error('invalid');
    const dueAt = now + delay;
    if (dueAt > INT64_MAX || (ttl > 0n && dueAt + ttl > INT64_MAX)) return error('invalid');
    if (BigInt(this.open.size) >= this.maxOpen) return error('full');
    const deferral = { id: this.allocateId(), owner, due_at: dueAt, expires_at: ttl === 0n ? 0n : dueAt + ttl };
    this.open.set(deferral.id, deferral);
    return ok(deferral);
  }

  claim({ id }, now) {
    if (!isInt64(id) || !isTime(now)) return error('invalid');
    const deferral = this.open.get(id);
    if (deferral === undefined) return error('not_found');
    if (now < deferral.due_at) return error('not_due');
    if (!this.isClaimable(deferral, now)) return error('expired');
    return ok(this.consume(id));
  }

  cancel({ id, caller }) {
    if (!isInt64(id) || !isName(caller)) return error('invalid');
    const deferral = this.open.get(id);
    if (deferral === undefined) return error('not_found');
    if (deferral.owner !== caller) return error('not_owner');
    return ok(this.consume(id));
  }

  expire({ id }, now) {
    if (!isInt64(id) || !isTime(now)) return error('invalid');
    const deferral = this.open.get(id);
    if (deferral === undefined) return error('not_found');
    if (!this.isExpirable(deferral, now)) return error('not_expired');
    return ok(this.consume(id));
  }

  get({ id }) {
    if (!isInt64(id)) return error('invalid');
    const deferral = this.open.get(id);
    return deferral === undefined ? error('not_found') : ok(deferral);
  }

  claimable({ limit }, now) {
    if (!isTime(limit) || !isTime(now)) return error('invalid');
    return ok(this.listed((d) => this.isClaimable(d, now), byKeys('due_at', 'id'), limit));
  }

  expirable({ limit }, now) {
    if (!isTime(limit) || !isTime(now)) return error('invalid');
    return ok(this.listed((d) => this.isExpirable(d, now), byKeys('expires_at', 'id'), limit));
  }

  listed(keep, order, limit) {
    const found = [...this.open.values()].filter(keep).sort(order);
    return limit < BigInt(found.length) ? found.slice(0, Number(limit)) : found;
  }

  consume(id) {
    const deferral = this.open.get(id);
    this.open.delete(id);
    return deferral;
  }

  observe() {
    return {
      max_open: this.maxOpen,
      next_id: this.nextId,
      open: [...this.open.values()].sort(byKeys('id')),
    };
  }
}

// Each op's argument names (operations.md). A request with any other op, or whose args
// are not an object holding exactly these keys, is answered `invalid` (protocol.md).
const ARGUMENTS = {
  schedule: ['owner', 'delay', 'ttl'],
  claim: ['id'],
  cancel: ['id', 'caller'],
  expire: ['id'],
  get: ['id'],
  claimable: ['limit'],
  expirable: ['limit'],
};

function isWellFormed(op, args) {
  if (typeof op !== 'string' || !Object.hasOwn(ARGUMENTS, op)) return false;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return false;
  const given = Object.keys(args);
  return given.length === ARGUMENTS[op].length && ARGUMENTS[op].every((name) => Object.hasOwn(args, name));
}

// The protocol: one request per line in, one reply per line out, stderr for logs.
function serve(makeBook) {
  let book = null;

  function answer(request) {
    switch (request.type) {
      case 'hello':
        return { type: 'hello', protocol: 1n, systems: ['duebook'], name: 'node-duebook' };
      case 'reset': {
        const maxOpen = request.config && request.config.max_open;
        if (!isInt64(maxOpen) || maxOpen < 1n) throw new Error('config.max_open must be an integer >= 1');
        book = makeBook(maxOpen);
        return { type: 'reset' };
      }
      case 'step': {
        if (book === null) throw new Error('step before reset');
        const { op, args, now } = request;
        if (!isWellFormed(op, args)) return { type: 'step', response: error('invalid') };
        return { type: 'step', response: book[op](args, now) };
      }
      case 'observe':
        if (book === null) throw new Error('observe before reset');
        return { type: 'observe', state: book.observe() };
      default:
        throw new Error(`unknown request type ${JSON.stringify(request.type)}`);
    }
  }

  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    let reply;
    try {
      reply = answer(parse(line));
    } catch (problem) {
      console.error(`node-duebook: ${problem.message}`);
      reply = { type: 'error', message: problem.message };
    }
    process.stdout.write(`${stringify(reply)}\n`);
  });
  // stdin EOF ends the readline interface; nothing else keeps node alive, so it exits.
}

module.exports = { Book, serve };

if (require.main === module) serve((maxOpen) => new Book(maxOpen));
