"""What paperlens reads out of a workspace's code and configs: values, components, anchors."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Model
from .paper import ComponentKind, Problem


class CodeLocation(Model):
    """A span of a workspace file. Lines and columns count from 0 (as LSP does); `file` is relative
    to the workspace root, with forward slashes."""

    file: str
    line: int = Field(ge=0)
    column: int = Field(default=0, ge=0)
    end_line: int | None = Field(default=None, ge=0)
    end_column: int | None = Field(default=None, ge=0)

    def short(self) -> str:
        return f"{self.file}:{self.line + 1}:{self.column + 1}"


ValueSiteKind = Literal[
    "keyword",  # f(lr=3e-4)
    "positional",  # nn.Dropout(0.1): the parameter's name known from the knowledge file
    "assignment",  # lr = 3e-4, self.lr = 3e-4, config.lr = 3e-4
    "function-default",  # def make(lr=3e-4)
    "argparse-default",  # parser.add_argument("--lr", default=3e-4)
    "config-default",  # a dataclass / pydantic / attrs field default
    "dict-entry",  # {"lr": 3e-4}
    "config-file",  # lr: 3e-4 in a YAML/JSON/TOML/INI file
    "command-line",  # python main.py --lr 4e-3, in a shell script or a README's command
]


class ValueSite(Model):
    """A value the code sets for something that may be a paper's setting."""

    name: str = Field(description="As written: the keyword, variable, attribute or dotted config key.")
    normalized_name: str | None = Field(default=None, description="The paper vocabulary's name (lr → learning_rate) when known.")
    value: float | str | bool | None = Field(description="The value when it can be computed: a number, a string, a boolean.")
    raw: str = Field(description="The source text of the value expression.")
    kind: ValueSiteKind
    call: str | None = Field(
        default=None,
        description="The call the value is passed to, as written (torch.optim.AdamW); for a function-default or "
        "config-default, the qualified name of the function or class it is the default of; for a command-line "
        "value, the whole command.",
    )
    component: str | None = Field(default=None, description="The canonical component of that call (AdamW), when known.")
    resolved_from: CodeLocation | None = Field(
        default=None, description="Where the value was found when it flowed from a name (a constant, a default)."
    )
    overridden: bool = Field(
        default=False,
        description="A default that a call in the workspace overrides, or a class's attribute starting from zero that "
        "code elsewhere adds to (a count): either way not the value the run uses as a setting.",
    )
    live: bool = Field(default=True, description="False in code that never runs (after return, under `if False:`).")
    help: str | None = Field(default=None, description="A command-line option's help text: what the option is, in the authors' words.")
    variant: str | None = Field(
        default=None,
        description="The string the nearest enclosing `if` or `case` compares a name with (`model_variant == \"llama2_70b\"`, "
        "`case \"llama2_70b\":`): the variant of the work the value is given for.",
    )
    variant_of: str | None = Field(default=None, description="The name that `if` or `match` compares, its last part (`args.model_variant` → `model_variant`).")
    location: CodeLocation


class ComponentSite(Model):
    """A use of a known building block: an optimizer, a norm, a loss, an activation, ..."""

    kind: ComponentKind
    name: str = Field(description="Canonical name, as in the paper vocabulary (LayerNorm, AdamW, GELU).")
    symbol: str = Field(description="As written in the code (nn.LayerNorm, F.gelu).")
    live: bool = True
    location: CodeLocation


class Anchor(Model):
    """A reference to the paper written by a person: `Eq. (3)`, `eq:loss`, `Sec. 3.2`, `Algorithm 1`."""

    text: str = Field(description="The words as written in the comment or docstring.")
    target_kind: Literal["equation", "section", "algorithm", "table", "label"]
    target: str = Field(description="The number or label referred to: '3', '3.2', 'eq:loss'.")
    function: str | None = Field(default=None, description="Qualified name of the function or class it documents.")
    location: CodeLocation


class FunctionSite(Model):
    """A function or class definition, for linking code to equations and algorithms."""

    name: str
    qualname: str
    kind: Literal["function", "class"]
    parameters: list[str] = Field(
        default_factory=list,
        description="What a caller's positional arguments fill, in order (self/cls left out); for a class, its "
        "constructor's (a dataclass's fields).",
    )
    used_in_file: bool = Field(
        default=True,
        description="False for a module-level definition its own file never uses: no reference, no decorator, not "
        "in `__all__`, not `main`.",
    )
    location: CodeLocation = Field(description="The whole definition, from `def`/`class` to its last line.")


class CallArguments(Model):
    """The arguments one file's calls pass to one callee, merged: which defaults they override."""

    callee: str = Field(description="The callee's last name (build for utils.build(...)); a class for its constructor.")
    keywords: list[str] = Field(default_factory=list, description="Parameters passed by name, sorted.")
    positional: int = Field(default=0, ge=0, description="The most arguments one call passes by position.")
    unpacked: bool = Field(default=False, description="A call passes *args or **kwargs: any parameter may be set.")


class ConfigReference(Model):
    """A config file the code names: open("config.yaml"), OmegaConf.load(...), @hydra.main(config_name=...)."""

    path: str = Field(description="As written (a Hydra config name gets its folder and `.yaml`).")
    resolved: str | None = Field(default=None, description="The workspace file it names, when one is found.")
    location: CodeLocation
    command: str | None = Field(default=None, description="The launcher's command that loads it (a documented run), None when code names it.")


class Launch(Model):
    """A command a launcher documents: the script it runs and the numeric flags it passes."""

    script: str | None = Field(description="As the command writes it, without `.py` (`tools/train`, a module `pkg/train`); None when unknown.")
    flags: list[str] = Field(default_factory=list, description="Flag names, dashes dropped and `-` as `_` (`drop_path`, `trainer.max_epochs`), sorted.")
    options: dict[str, str] = Field(
        default_factory=dict, description="Every flag with the value it is given, numeric or not, named as in `flags` (`model_variant`: `llama2_70b`)."
    )


class FileIndex(Model):
    """Everything read from one workspace file."""

    file: str
    sha256: str
    language: Literal["python", "yaml", "json", "toml", "ini", "shell", "markdown", "notebook"]
    values: list[ValueSite] = Field(default_factory=list)
    components: list[ComponentSite] = Field(default_factory=list)
    anchors: list[Anchor] = Field(default_factory=list)
    functions: list[FunctionSite] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list, description="E.g. a syntax error: what could be read still is.")
    calls: list[CallArguments] = Field(default_factory=list, description="What calls here pass, per callee name.")
    imported_names: list[str] = Field(
        default_factory=list,
        description="Names this file takes from other modules (imported, read off an imported module, a config's "
        "`_target_`), sorted; `module.*` for a star import. Tells which definitions elsewhere are used.",
    )
    imported_modules: list[str] = Field(
        default_factory=list,
        description="What this file imports by absolute name, dotted as imported (torch.distributed, "
        "accelerate.Accelerator), sorted: tells how its runs are launched (one process or several).",
    )
    assigned_attributes: list[str] = Field(
        default_factory=list,
        description="Attributes this file sets on objects other than self/cls (cfg.lr = ..., "
        "parser.set_defaults(lr=...)), sorted: a config field's or a command-line default may be replaced there.",
    )
    launches: list[Launch] = Field(
        default_factory=list,
        description="A launcher's commands: which script each runs with which flags (a flag replaces that script's "
        "command-line default, and any config default of its name).",
    )
    counted_attributes: list[str] = Field(
        default_factory=list,
        description="Attributes this file adds to on objects other than self/cls (trainer.step += 1), sorted: "
        "where a class starts such an attribute (self.step = 0) it starts a count, not a setting.",
    )
    dead_code: list[CodeLocation] = Field(
        default_factory=list,
        description="Code that never runs: after return/raise/continue/break, under `if False:` or `if TYPE_CHECKING:`.",
    )
    config_references: list[ConfigReference] = Field(default_factory=list)


class CodeIndex(Model):
    """The workspace's files, each indexed on its own (so one edit re-reads one file)."""

    root: str
    files: list[FileIndex] = Field(default_factory=list)
