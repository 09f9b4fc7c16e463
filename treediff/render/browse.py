"""The ``treediff browse`` terminal app (textual): the aligned tree, a details pane, divergence keys.

All the answers come from :class:`~treediff.render.browse_model.BrowseModel`;
this module only turns them into widgets.  A node's children are added to the
textual ``Tree`` when it is first expanded, so opening a 50k-row alignment
builds the root's children only.

Keys (shown in the footer): ``n`` / ``p`` next / previous divergence by cost
(largest |delta| first), ``g`` or ``/`` go to a path (UCI or SAN), ``u`` the
parent, ``t`` the next notation (own, uci, san), ``enter`` / ``space``
expand or collapse, ``q`` quit.
"""
from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Input, Static, Tree
from textual.widgets.tree import TreeNode

from treediff.model.errors import InputError
from treediff.render.browse_model import BrowseModel

#: Label colour per row status (differs / only on one side); same rows keep the default colour.
STATUS_STYLES = {"same": "", "differs": "yellow", "only-A": "cyan", "only-B": "magenta"}


class BrowseTree(Tree[int]):
    """The textual Tree with its expand/collapse key shown in the footer."""

    BINDINGS = [Binding("space", "toggle_node", "expand/collapse")]


class BrowseApp(App[None]):
    """Browse one aligned tree: ``model`` answers, ``title`` is the top line (sides, iteration, totals)."""

    TITLE = "treediff browse"
    CSS = """
    #title { height: auto; background: $boost; padding: 0 1; }
    #tree { height: 1fr; }
    #details { height: 14; border-top: solid $accent; padding: 0 1; }
    #jump { display: none; }
    #jump.shown { display: block; }
    """
    BINDINGS = [
        Binding("n", "next_divergence", "next divergence"),
        Binding("p", "previous_divergence", "prev divergence"),
        Binding("g", "jump", "go to path"),
        Binding("slash", "jump", "go to path", show=False),
        Binding("u", "parent", "parent"),
        Binding("t", "notation", "notation"),
        Binding("escape", "cancel_jump", "cancel", show=False),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, model: BrowseModel, title: str = ""):
        super().__init__()
        self.model = model
        self.title_text = title
        self.nodes: dict[int, TreeNode[int]] = {}
        self._loaded: set[int] = set()
        self._last_rank: int | None = None

    # --- widgets ------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        model = self.model
        yield Static(self.title_text, id="title")
        root = model.root
        tree = BrowseTree(self._label(root, model.labels_of([root])[0]), data=root, id="tree")
        tree.guide_depth = 2
        self.nodes[root] = tree.root
        yield tree
        with VerticalScroll(id="details"):
            yield Static("", id="details-text")
        yield Input(placeholder="go to path: UCI or SAN moves joined by / (e2e4/e7e5 or e4/e5); enter to go, "
                                "escape to cancel", id="jump")
        yield Footer()

    def on_mount(self) -> None:
        tree = self.tree_view
        self._load(tree.root)
        tree.root.expand()
        tree.focus()
        self._show_details(self.model.root)

    @property
    def tree_view(self) -> Tree[int]:
        return self.query_one("#tree", BrowseTree)

    def _label(self, row: int, text: str) -> Text:
        return Text(text, style=STATUS_STYLES.get(str(self.model.status[row]), ""), no_wrap=True)

    def _load(self, node: TreeNode[int]) -> None:
        """Add the node's children (once), each expandable when it has children of its own."""
        row = node.data
        if row is None or row in self._loaded:
            return
        self._loaded.add(row)
        children = self.model.children(row)
        for child, text in zip(children.tolist(), self.model.labels_of(children)):
            self.nodes[child] = node.add(self._label(child, text), data=child,
                                         allow_expand=self.model.has_children(child))

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[int]) -> None:
        self._load(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[int]) -> None:
        if event.node.data is not None:
            self._show_details(event.node.data)

    def _show_details(self, row: int) -> None:
        self.query_one("#details-text", Static).update(Text("\n".join(self.model.detail_lines(row))))

    # --- moving -------------------------------------------------------------------------------------------

    @property
    def cursor_row(self) -> int | None:
        """The row under the cursor (the alignment's main-row number), None before the first move."""
        node = self.tree_view.cursor_node
        return None if node is None else node.data

    def move_to(self, row: int) -> None:
        """Expand the row's ancestors (adding their children) and put the cursor on it."""
        tree = self.tree_view
        for ancestor in self.model.ancestors(row):
            node = self.nodes[ancestor]
            self._load(node)
            if not node.is_expanded:
                node.expand()
        target = self.nodes[row]
        # The tree numbers its lines lazily; reading them now gives the target its line before the cursor moves.
        tree._tree_lines  # noqa: B018 - a property that rebuilds the line index
        tree.move_cursor(target)
        self._show_details(row)

    def _divergence(self, forward: bool) -> None:
        model = self.model
        rank = model.step_divergence(self.cursor_row, self._last_rank, forward)
        if rank is None:
            what = "no divergence in this tree" if not len(model.divergences) else (
                "no cheaper divergence" if forward else "no costlier divergence")
            self.notify(what, timeout=3)
            return
        self._last_rank = rank
        self.move_to(int(model.divergences[rank]))

    def action_next_divergence(self) -> None:
        self._divergence(True)

    def action_previous_divergence(self) -> None:
        self._divergence(False)

    def action_parent(self) -> None:
        row = self.cursor_row
        if row is not None and row != self.model.root:
            self.move_to(int(self.model.parent[row]))

    def action_notation(self) -> None:
        """Write moves in the next notation (own, uci, san): every label built so far is made again."""
        name = self.model.next_notation()
        if not name:
            return
        for parent in sorted(self._loaded):
            children = self.model.children(parent)
            for child, text in zip(children.tolist(), self.model.labels_of(children)):
                self.nodes[child].set_label(self._label(child, text))
        root = self.model.root
        self.nodes[root].set_label(self._label(root, self.model.labels_of([root])[0]))
        row = self.cursor_row
        self._show_details(self.model.root if row is None else row)
        self.notify(f"notation: {name}", timeout=2)

    def action_jump(self) -> None:
        box = self.query_one("#jump", Input)
        box.add_class("shown")
        box.value = ""
        box.focus()

    def action_cancel_jump(self) -> None:
        box = self.query_one("#jump", Input)
        box.remove_class("shown")
        self.tree_view.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            row = self.model.find(event.value)
        except InputError as exc:
            self.notify(str(exc), severity="error", timeout=5)
            return
        self.action_cancel_jump()
        self.move_to(row)
