"""ITF, the Informal Trace Format of Apalache and Quint, to and from duespec traces.

Export lets Quint and Apalache tooling (the ITF trace viewer, quint-connect style drivers)
read a duespec trace: one ITF state per step, holding the model's observable state after
the step, the time, the response, and the `mbt::` metadata that `quint run --mbt` writes.
Import turns a trace produced by `quint run --mbt` into a duespec trace that `duespec
replay` runs. A spec written in its own names gets an import recipe: which pick is which
argument, where the clock is, and a mapping hook that reads the spec's own answers and
state as duespec's, so replay holds the foreign model to duespec's model and the target.
The mapping is documented in docs/traces.md ("ITF").

The package is split by direction: values.py (the ITF value forms both directions share),
export.py, recipe.py (how a foreign spec's names map to duespec's), importer.py, and
command.py (`duespec itf`). The names below are its public API.
"""

from duespec.traces.itf.command import add_parser, main
from duespec.traces.itf.export import export_itf
from duespec.traces.itf.importer import import_itf, read_itf
from duespec.traces.itf.recipe import ForeignStep, Hook, ImportRecipe, RecipeError, load_hook, load_mapping
from duespec.traces.itf.values import NONE, action_name, from_itf, json_problem, op_for_action, to_itf

__all__ = ["NONE", "ForeignStep", "Hook", "ImportRecipe", "RecipeError", "action_name", "add_parser",
           "export_itf", "from_itf", "import_itf", "json_problem", "load_hook", "load_mapping", "main",
           "op_for_action", "read_itf", "to_itf"]
