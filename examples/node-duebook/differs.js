#!/usr/bin/env node
'use strict';
// A duebook that differs from the spec in three independent places, as a real
// implementation might: two differences its maintainers chose (declared in
// declared.toml) and one bug. For trying `duespec conform --declared`:
//   duespec conform duebook --target "stdio:node examples/node-duebook/differs.js" \
//     --declared examples/node-duebook/declared.toml
//
// 1. cancel by someone who is not the owner answers not_found (chosen: it does not
//    reveal that the id exists);
// 2. get answers the deferral with an extra field, "state": "open" (chosen: our API
//    shows it);
// 3. the claim window is closed, [DueAt, ExpiresAt] (the bug, as in broken.js).

const { Book, serve } = require('./duebook.js');

class DifferentBook extends Book {
  isClaimable(deferral, now) {
    return deferral.due_at <= now && (deferral.expires_at === 0n || now <= deferral.expires_at);
  }

  cancel(args) {
    const answer = super.cancel(args);
    if (answer.error === 'not_owner') return { error: 'not_found', message: 'you own no deferral with this id' };
    return answer;
  }

  get(args) {
    const answer = super.get(args);
    return answer.ok === undefined ? answer : { ok: { ...answer.ok, state: 'open' } };
  }
}

serve((maxOpen) => new DifferentBook(maxOpen));
