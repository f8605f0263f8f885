#!/usr/bin/env node
'use strict';
// A deliberately broken duebook, for seeing what a failing conformance run looks like.
// The bug is the classic one at a window's end: the claim window is closed [DueAt,
// ExpiresAt] instead of half-open [DueAt, ExpiresAt), so a deferral can still be claimed
// at the very moment anyone may expire it (Compound's timelock shipped this off-by-one).
//
//   duespec conform duebook --target "stdio:node examples/node-duebook/broken.js"

const { Book, serve } = require('./duebook.js');

class ClosedWindowBook extends Book {
  isClaimable(deferral, now) {
    return deferral.due_at <= now && (deferral.expires_at === 0n || now <= deferral.expires_at);
  }
}

serve((maxOpen) => new ClosedWindowBook(maxOpen));
