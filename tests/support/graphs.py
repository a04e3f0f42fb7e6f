"""A mirrored cache for the graph tests: a small shop in Python, JavaScript, Go and C, two commits.

Its edges are known: every call, import, base and containment the graph should find is
written down in the files below, and so is what it must not invent (calls on local
objects of unknown type, library calls).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.cache import MirroredCache
from tests.support.gitrepos import MIT_LICENSE, Content, commit, init_repo, make_repo

MODELS_PY = '''"""Models."""


class Base:
    def save(self):
        return self.validate()

    def validate(self):
        return True


class Order(Base):
    """An order."""

    def total(self, items: list, *, tax=0) -> int:
        """Sum the items."""
        return sum_prices(items)

    def validate(self):
        return self.total([]) >= 0


def sum_prices(items):
    return len(items)
'''

VIEWS_PY = """from .models import Order
from shop import models
import shop.models as m
import json


@route("/orders")
def checkout(request):
    order = Order()
    order.save()
    models.sum_prices([])
    json.dumps(order)
    return render(order)


def render(order):
    # sum_prices(1) in a comment is no call
    return m.sum_prices([order])
"""

VIEWS_PY_2 = """from .models import Order
from shop import models
import shop.models as m
import json


@route("/orders")
def checkout(request):
    order = Order()
    order.save()
    models.sum_prices([])
    json.dumps(order)
    return refund(order)


def refund(order):
    return m.sum_prices([])
"""

GRAPH_FILES: dict[str, Content] = {
    "LICENSE": MIT_LICENSE,
    "shop/__init__.py": '"""The shop."""\n',
    "shop/models.py": MODELS_PY,
    "shop/views.py": VIEWS_PY,
    "web/app.js": (
        "import { helper } from './util';\n\nexport function main() {\n  return helper(1);\n}\n"
    ),
    "web/util.js": "export function helper(x) {\n  return x;\n}\n",
    "web/response.js": (
        "var res = module.exports = {};\n\nres.json = function json(body) {\n"
        "  return this.send(stringify(body));\n};\n\n"
        "res.send = function send(body) {\n  return body;\n};\n\n"
        "function stringify(value) {\n  return JSON.stringify(value);\n}\n"
    ),
    "web/cjs/util.js": "exports.clamp = function (x) {\n  return x;\n};\n",
    "web/cjs/main.js": (
        "var util = require('./util');\nconst { clamp } = require('./util');\n\n"
        "function run(x) {\n  return util.clamp(x) + clamp(x);\n}\n\n"
        "function again(x) {\n  return clamp(x);\n}\n"
    ),
    "web/view.js": (
        "function View(name) {\n  this.path = this.lookup(name);\n}\n\n"
        "View.prototype.lookup = function lookup(name) {\n  return name;\n};\n"
    ),
    "web/timer.ts": (
        "export class Timer {\n  #count = 0;\n\n  #delay(): number {\n    return 1;\n  }\n\n"
        "  wait(): number {\n    return this.#delay() + this.#count;\n  }\n}\n"
    ),
    "cpp/shape.h": (
        "namespace geo {\n\nclass Shape {\n public:\n  virtual ~Shape() = default;\n"
        "  double twice() const { return 2 * size(); }\n  double size() const { return 1; }\n"
        "};\n\n}  // namespace geo\n"
    ),
    "cpp/circle.cpp": (
        '#include "shape.h"\n\nnamespace geo {\n\nclass Circle : public Shape {\n public:\n'
        "  ~Circle() { release(); }\n  double doubled() const { return twice(); }\n"
        "  void release() {}\n};\n\n}  // namespace geo\n"
    ),
    "go/srv/server.go": (
        "package srv\n\nfunc Serve() int {\n\treturn handle()\n}\n\n"
        "func handle() int {\n\treturn 1\n}\n"
    ),
    "go/srv/conn.go": (
        "package srv\n\ntype Conn struct{}\n\nfunc (c *Conn) Close() error {\n"
        "\treturn c.flush()\n}\n"
    ),
    "go/srv/flush.go": "package srv\n\nfunc (c *Conn) flush() error {\n\treturn nil\n}\n",
    "ruby/app.rb": (
        'require_relative "helpers"\n\nclass App\n  def route(path)\n'
        "    redirect normalize(path)\n  end\n\n  def normalize(path)\n    path\n  end\nend\n"
    ),
    "ruby/helpers.rb": "module Helpers\n  def h(text) = text\nend\n\ndef format(x) = x\n",
    "ruby/shop/base.rb": "module Shop\n  class Base\n    def run = nil\n  end\nend\n",
    "ruby/shop/engine.rb": (
        "module Shop\n  class Engine < Base\n    def start\n      run(1)\n      format(2)\n"
        "    end\n  end\nend\n"
    ),
    "php/Group.php": (
        "<?php\nnamespace App;\n\nuse App\\Util\\Clamp;\n\nclass Group {\n"
        "  public function collect() {\n    return $this->register(Clamp::clamp(1));\n  }\n\n"
        "  private function register($x) {\n    return $x;\n  }\n}\n"
    ),
    "php/Util/Clamp.php": (
        "<?php\nnamespace App\\Util;\n\nclass Clamp {\n"
        "  public static function clamp($x) {\n    return $x;\n  }\n}\n"
    ),
    "cs/Base.cs": "namespace Acme.Shop\n{\n    public class Base\n    {\n    }\n}\n",
    "cs/Engine.cs": (
        "using Acme.Util;\n\nnamespace Acme.Shop\n{\n    public class Engine : Base\n    {\n"
        "        [Fact]\n        public int Run()\n        {\n"
        "            return Clamp.Limit(Step());\n"
        "        }\n\n        private int Step() => 1;\n    }\n}\n"
    ),
    "cs/Util/Clamp.cs": (
        "namespace Acme.Util\n{\n    public static class Clamp\n    {\n"
        "        public static int Limit(int x) => x;\n    }\n}\n"
    ),
    "kt/src/main/kotlin/shop/Base.kt": "package shop\n\nopen class Base {\n    fun run() = 1\n}\n",
    "kt/src/main/kotlin/shop/Engine.kt": (
        "package shop\n\nimport util.clamp\n\nclass Engine : Base() {\n    fun start() {\n"
        "        run()\n        clamp(2)\n    }\n}\n"
    ),
    "kt/src/main/kotlin/util/Clamp.kt": "package util\n\nfun clamp(x: Int) = x\n",
    "c/list.h": "int list_len(struct list *l);\n",
    "c/list.c": (
        '#include "list.h"\n\nstatic int count_nodes(struct list *l)\n{\n\treturn 0;\n}\n\n'
        "int list_len(struct list *l)\n{\n\treturn count_nodes(l);\n}\n"
    ),
}

CHANGES: dict[str, Content | None] = {
    "shop/views.py": VIEWS_PY_2,
    "shop/models.py": MODELS_PY.replace(
        "return sum_prices(items)", "return sum_prices(items) + tax"
    ),
    "web/util.js": None,
}


@dataclass(frozen=True, slots=True)
class GraphCache:
    """The mirrored cache and the two commits of `acme/shop`."""

    cache: MirroredCache
    first: str
    second: str


def build_graph_cache(root: Path) -> GraphCache:
    """The shop at two commits (the second mirrored as head), and an unlicensed neighbour."""
    sources = root / "sources"
    repo = init_repo(sources / "shop")
    first = commit(repo, GRAPH_FILES, message="initial")
    second = commit(repo, CHANGES, message="refunds")
    (root / "cache").mkdir()
    cache = MirroredCache(root / "cache")
    cache.set_config(
        "[tools]\ngraph_default_nodes = 40\ngraph_max_nodes = 50\nread_max_chars = 2000\n"
    )
    cache.add("acme/shop", sources / "shop")
    make_repo(sources / "bare", {"main.py": "def main():\n    return 1\n"})
    cache.add("acme/unlicensed", sources / "bare")
    return GraphCache(cache=cache, first=first, second=second)
