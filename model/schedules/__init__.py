"""The Resonate schedules reference model: a mirror of the Lean spec at 83d64c3.

One handler per file, named by its requirement ID in spec/schedules.md; every state change
goes through an effect of `state.py`. `step` is the JSON face of docs/operations.md."""

from duespec.model.schedules.dispatch import step
from duespec.model.schedules.observe import drain_sent, observe, outbox_entry_json
from duespec.model.schedules.state import Config, SentMessage, ServerState, forget_sent, new_state, outbox_key

__all__ = ["Config", "ServerState", "new_state", "step", "observe", "drain_sent",
           "outbox_entry_json", "outbox_key", "SentMessage", "forget_sent"]
