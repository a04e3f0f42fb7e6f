"""Small repositories whose graph edges are known, one per language, for bench.graph.

Every import, call and base each file holds is listed by hand in `edges`, including the
ones a resolver without type inference cannot find (a method called on a local object, a
call through `super()`): they count against recall, as they should.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GraphCase:
    """Files and the import, invoke and inherit edges between their entities."""

    language: str
    files: dict[str, str]
    edges: frozenset[tuple[str, str, str]]


PYTHON = GraphCase(
    "python",
    {
        "app/__init__.py": "from .core import Engine\n",
        "app/core.py": """import os
from .util import clamp, Timer
from . import util
import app.storage as storage


class Base:
    def run(self):
        self.prepare()
        return self.execute()

    def prepare(self):
        return None

    def execute(self):
        raise NotImplementedError


class Engine(Base):
    def __init__(self, limit):
        self.limit = clamp(limit, 0, 10)
        self.timer = Timer()

    def execute(self):
        data = storage.load("x")
        return util.summarize(data)

    def restart(self):
        self.run()
        os.getcwd()


def make_engine():
    return Engine(3)
""",
        "app/util.py": """def clamp(value, low, high):
    return max(low, min(value, high))


def summarize(data):
    return len(data)


class Timer:
    def start(self):
        return _now()


def _now():
    return 0
""",
        "app/storage.py": """from app.util import summarize as sm


def load(name):
    return sm([name])


class Store:
    def save(self, item):
        return load(item)
""",
        "app/cli.py": """from app.core import make_engine, Engine
from app import storage


class FastEngine(Engine):
    def execute(self):
        return super().execute()


def main():
    engine = make_engine()
    engine.run()
    storage.Store().save(1)
    FastEngine(1).restart()
    return Engine.restart(engine)
""",
    },
    frozenset(
        {
            ("app/__init__.py", "app/core.py:Engine", "import"),
            ("app/core.py", "app/util.py:clamp", "import"),
            ("app/core.py", "app/util.py:Timer", "import"),
            ("app/core.py", "app/util.py", "import"),
            ("app/core.py", "app/storage.py", "import"),
            ("app/storage.py", "app/util.py:summarize", "import"),
            ("app/cli.py", "app/core.py:make_engine", "import"),
            ("app/cli.py", "app/core.py:Engine", "import"),
            ("app/cli.py", "app/storage.py", "import"),
            ("app/core.py:Base.run", "app/core.py:Base.prepare", "invoke"),
            ("app/core.py:Base.run", "app/core.py:Base.execute", "invoke"),
            ("app/core.py:Engine.__init__", "app/util.py:clamp", "invoke"),
            ("app/core.py:Engine.__init__", "app/util.py:Timer", "invoke"),
            ("app/core.py:Engine.execute", "app/storage.py:load", "invoke"),
            ("app/core.py:Engine.execute", "app/util.py:summarize", "invoke"),
            ("app/core.py:Engine.restart", "app/core.py:Base.run", "invoke"),
            ("app/core.py:make_engine", "app/core.py:Engine", "invoke"),
            ("app/util.py:Timer.start", "app/util.py:_now", "invoke"),
            ("app/storage.py:load", "app/util.py:summarize", "invoke"),
            ("app/storage.py:Store.save", "app/storage.py:load", "invoke"),
            ("app/cli.py:FastEngine.execute", "app/core.py:Engine.execute", "invoke"),
            ("app/cli.py:main", "app/core.py:make_engine", "invoke"),
            ("app/cli.py:main", "app/core.py:Base.run", "invoke"),
            ("app/cli.py:main", "app/storage.py:Store", "invoke"),
            ("app/cli.py:main", "app/cli.py:FastEngine", "invoke"),
            ("app/cli.py:main", "app/core.py:Engine.restart", "invoke"),
            ("app/core.py:Engine", "app/core.py:Base", "inherit"),
            ("app/cli.py:FastEngine", "app/core.py:Engine", "inherit"),
        }
    ),
)

JAVASCRIPT = GraphCase(
    "javascript",
    {
        "web/util.js": """export function helper(x) {
  return inner(x);
}

function inner(x) {
  return x;
}

export class Widget {
  render() {
    return helper(1);
  }
}
""",
        "web/app.js": """import { helper, Widget } from './util';
import * as u from './util.js';

export function main() {
  const w = new Widget();
  u.helper(2);
  return helper(3) + w.render();
}

class Fancy extends Widget {
  render() {
    return this.paint();
  }

  paint() {
    return 1;
  }
}
""",
    },
    frozenset(
        {
            ("web/app.js", "web/util.js:helper", "import"),
            ("web/app.js", "web/util.js:Widget", "import"),
            ("web/app.js", "web/util.js", "import"),
            ("web/util.js:helper", "web/util.js:inner", "invoke"),
            ("web/util.js:Widget.render", "web/util.js:helper", "invoke"),
            ("web/app.js:main", "web/util.js:Widget", "invoke"),
            ("web/app.js:main", "web/util.js:helper", "invoke"),
            ("web/app.js:main", "web/util.js:Widget.render", "invoke"),
            ("web/app.js:Fancy.render", "web/app.js:Fancy.paint", "invoke"),
            ("web/app.js:Fancy", "web/util.js:Widget", "inherit"),
        }
    ),
)

GO = GraphCase(
    "go",
    {
        "go.mod": "module example.com/shop\n",
        "store/store.go": """package store

type Store struct{}

func New() *Store {
\treturn &Store{}
}

func (s *Store) Get(k string) string {
\treturn normalize(k)
}

func (s *Store) Has(k string) bool {
\treturn s.Get(k) != ""
}
""",
        "store/util.go": """package store

func normalize(k string) string {
\treturn k
}
""",
        "main.go": """package main

import (
\t"fmt"

\t"example.com/shop/store"
)

func main() {
\ts := store.New()
\tfmt.Println(s.Get("x"))
\trun()
}

func run() {}
""",
    },
    frozenset(
        {
            ("main.go", "store", "import"),
            ("store/store.go:Store.Get", "store/util.go:normalize", "invoke"),
            ("store/store.go:Store.Has", "store/store.go:Store.Get", "invoke"),
            ("main.go:main", "store/store.go:New", "invoke"),
            ("main.go:main", "store/store.go:Store.Get", "invoke"),
            ("main.go:main", "main.go:run", "invoke"),
        }
    ),
)

JAVA = GraphCase(
    "java",
    {
        "src/main/java/com/acme/Base.java": """package com.acme;

public class Base {
    public int run() {
        return step();
    }

    int step() {
        return 1;
    }
}
""",
        "src/main/java/com/acme/Impl.java": """package com.acme;

import com.acme.util.Helper;

public class Impl extends Base implements Runnable {
    int step() {
        return Helper.twice(2);
    }

    public void go() {
        run();
    }
}
""",
        "src/main/java/com/acme/util/Helper.java": """package com.acme.util;

public class Helper {
    public static int twice(int x) {
        return x * 2;
    }
}
""",
    },
    frozenset(
        {
            (
                "src/main/java/com/acme/Impl.java",
                "src/main/java/com/acme/util/Helper.java:Helper",
                "import",
            ),
            (
                "src/main/java/com/acme/Impl.java:Impl",
                "src/main/java/com/acme/Base.java:Base",
                "inherit",
            ),
            (
                "src/main/java/com/acme/Base.java:Base.run",
                "src/main/java/com/acme/Base.java:Base.step",
                "invoke",
            ),
            (
                "src/main/java/com/acme/Impl.java:Impl.step",
                "src/main/java/com/acme/util/Helper.java:Helper.twice",
                "invoke",
            ),
            (
                "src/main/java/com/acme/Impl.java:Impl.go",
                "src/main/java/com/acme/Base.java:Base.run",
                "invoke",
            ),
        }
    ),
)

RUST = GraphCase(
    "rust",
    {
        "src/lib.rs": """mod shapes;

use crate::shapes::{area, Circle};

pub fn total() -> f64 {
    let c = Circle::new(1.0);
    area(&c)
}
""",
        "src/shapes.rs": """pub struct Circle {
    r: f64,
}

impl Circle {
    pub fn new(r: f64) -> Self {
        Circle { r }
    }

    pub fn radius(&self) -> f64 {
        self.r
    }
}

pub fn area(c: &Circle) -> f64 {
    helper(c.radius())
}

fn helper(x: f64) -> f64 {
    x * x
}
""",
    },
    frozenset(
        {
            ("src/lib.rs", "src/shapes.rs", "import"),
            ("src/lib.rs", "src/shapes.rs:Circle", "import"),
            ("src/lib.rs", "src/shapes.rs:area", "import"),
            ("src/lib.rs:total", "src/shapes.rs:Circle.new", "invoke"),
            ("src/lib.rs:total", "src/shapes.rs:area", "invoke"),
            ("src/shapes.rs:area", "src/shapes.rs:helper", "invoke"),
            ("src/shapes.rs:area", "src/shapes.rs:Circle.radius", "invoke"),
        }
    ),
)

C = GraphCase(
    "c",
    {
        "list.h": "struct node;\nint list_len(struct node *n);\n",
        "list.c": """#include "list.h"

static int count(struct node *n)
{
\treturn n ? 1 + count(n->next) : 0;
}

int list_len(struct node *n)
{
\treturn count(n);
}
""",
        "main.c": """#include <stdio.h>
#include "list.h"

static int helper(void);

int main(void)
{
\tprintf("%d", list_len(0));
\treturn helper();
}

static int helper(void)
{
\treturn 0;
}
""",
    },
    frozenset(
        {
            ("list.c", "list.h", "import"),
            ("main.c", "list.h", "import"),
            ("list.c:count", "list.c:count", "invoke"),
            ("list.c:list_len", "list.c:count", "invoke"),
            ("main.c:main", "list.c:list_len", "invoke"),
            ("main.c:main", "main.c:helper", "invoke"),
        }
    ),
)

TYPESCRIPT = GraphCase(
    "typescript",
    {
        "src/shape.ts": """export interface Shape {
  area(): number;
}

export abstract class Base implements Shape {
  abstract area(): number;

  describe(): string {
    return format(this.area());
  }
}

export function format(n: number): string {
  return n.toFixed(2);
}
""",
        "src/square.ts": """import { Base, format } from "./shape";

export class Square extends Base {
  constructor(private side: number) {
    super();
  }

  area(): number {
    return this.side * this.side;
  }

  label(): string {
    return format(this.area());
  }
}

export const make = (n: number): Square => new Square(n);
""",
    },
    frozenset(
        {
            ("src/square.ts", "src/shape.ts:Base", "import"),
            ("src/square.ts", "src/shape.ts:format", "import"),
            ("src/shape.ts:Base", "src/shape.ts:Shape", "inherit"),
            ("src/square.ts:Square", "src/shape.ts:Base", "inherit"),
            ("src/shape.ts:Base.describe", "src/shape.ts:format", "invoke"),
            ("src/shape.ts:Base.describe", "src/shape.ts:Base.area", "invoke"),
            ("src/square.ts:Square.label", "src/shape.ts:format", "invoke"),
            ("src/square.ts:Square.label", "src/square.ts:Square.area", "invoke"),
            ("src/square.ts:make", "src/square.ts:Square", "invoke"),
            ("src/square.ts:Square.constructor", "src/shape.ts:Base", "invoke"),
        }
    ),
)

CPP = GraphCase(
    "cpp",
    {
        "geo/shape.h": """#pragma once

namespace geo {

class Shape {
 public:
  virtual ~Shape() = default;
  virtual double area() const = 0;
  double twice() const { return 2 * area(); }
};

double scale(double x);

}  // namespace geo
""",
        "geo/circle.cpp": """#include "shape.h"

namespace geo {

double scale(double x) { return x * 1.5; }

class Circle : public Shape {
 public:
  explicit Circle(double r) : r_(r) {}
  double area() const override { return scale(r_ * r_); }
  double doubled() const { return twice(); }

 private:
  double r_;
};

double total() {
  Circle c(1.0);
  return c.area() + scale(2.0);
}

}  // namespace geo
""",
    },
    frozenset(
        {
            ("geo/circle.cpp", "geo/shape.h", "import"),
            ("geo/circle.cpp:geo.Circle", "geo/shape.h:geo.Shape", "inherit"),
            ("geo/shape.h:geo.Shape.twice", "geo/shape.h:geo.Shape.area", "invoke"),
            ("geo/circle.cpp:geo.Circle.area", "geo/circle.cpp:geo.scale", "invoke"),
            ("geo/circle.cpp:geo.Circle.doubled", "geo/shape.h:geo.Shape.twice", "invoke"),
            ("geo/circle.cpp:geo.total", "geo/circle.cpp:geo.scale", "invoke"),
            ("geo/circle.cpp:geo.total", "geo/circle.cpp:geo.Circle.area", "invoke"),
        }
    ),
)

RUBY = GraphCase(
    "ruby",
    {
        "lib/shop/base.rb": """module Shop
  class Base
    def run
      prepare
      execute
    end

    def prepare
      nil
    end

    def execute
      raise NotImplementedError
    end
  end
end
""",
        "lib/shop/engine.rb": """require_relative "base"

module Shop
  class Engine < Base
    def execute
      self.log(summary(3))
    end

    def log(message)
      puts message
    end

    def summary(n)
      format("%d", n)
    end
  end
end
""",
    },
    frozenset(
        {
            ("lib/shop/engine.rb", "lib/shop/base.rb", "import"),
            ("lib/shop/engine.rb:Shop.Engine", "lib/shop/base.rb:Shop.Base", "inherit"),
            ("lib/shop/base.rb:Shop.Base.run", "lib/shop/base.rb:Shop.Base.prepare", "invoke"),
            ("lib/shop/base.rb:Shop.Base.run", "lib/shop/base.rb:Shop.Base.execute", "invoke"),
            (
                "lib/shop/engine.rb:Shop.Engine.execute",
                "lib/shop/engine.rb:Shop.Engine.log",
                "invoke",
            ),
            (
                "lib/shop/engine.rb:Shop.Engine.execute",
                "lib/shop/engine.rb:Shop.Engine.summary",
                "invoke",
            ),
        }
    ),
)

PHP = GraphCase(
    "php",
    {
        "src/Base.php": """<?php
namespace Shop;

abstract class Base
{
    public function run()
    {
        $this->prepare();
        return $this->execute();
    }

    protected function prepare()
    {
    }

    abstract protected function execute();
}
""",
        "src/Engine.php": """<?php
namespace Shop;

use Shop\\Util\\Clamp;

class Engine extends Base
{
    protected function execute()
    {
        return Clamp::clamp(self::limit());
    }

    private static function limit()
    {
        return 3;
    }
}
""",
        "src/Util/Clamp.php": """<?php
namespace Shop\\Util;

final class Clamp
{
    public static function clamp($x)
    {
        return max(0, $x);
    }
}
""",
    },
    frozenset(
        {
            ("src/Engine.php", "src/Util/Clamp.php:Clamp", "import"),
            ("src/Engine.php:Engine", "src/Base.php:Base", "inherit"),
            ("src/Base.php:Base.run", "src/Base.php:Base.prepare", "invoke"),
            ("src/Base.php:Base.run", "src/Base.php:Base.execute", "invoke"),
            ("src/Engine.php:Engine.execute", "src/Util/Clamp.php:Clamp.clamp", "invoke"),
            ("src/Engine.php:Engine.execute", "src/Engine.php:Engine.limit", "invoke"),
        }
    ),
)

CSHARP = GraphCase(
    "csharp",
    {
        "src/Shop/Base.cs": """namespace Acme.Shop
{
    public abstract class Base
    {
        public int Run()
        {
            Prepare();
            return Execute();
        }

        protected void Prepare()
        {
        }

        protected abstract int Execute();
    }
}
""",
        "src/Shop/Engine.cs": """using Acme.Shop.Util;

namespace Acme.Shop
{
    public class Engine : Base, IRunner
    {
        protected override int Execute()
        {
            return Clamp.Limit(this.Step());
        }

        private int Step() => 3;
    }

    public interface IRunner
    {
        int Run();
    }
}
""",
        "src/Shop/Util/Clamp.cs": """namespace Acme.Shop.Util
{
    public static class Clamp
    {
        public static int Limit(int x) => System.Math.Max(0, x);
    }
}
""",
    },
    frozenset(
        {
            ("src/Shop/Engine.cs", "src/Shop/Util/Clamp.cs:Acme.Shop.Util", "import"),
            ("src/Shop/Engine.cs:Acme.Shop.Engine", "src/Shop/Base.cs:Acme.Shop.Base", "inherit"),
            (
                "src/Shop/Engine.cs:Acme.Shop.Engine",
                "src/Shop/Engine.cs:Acme.Shop.IRunner",
                "inherit",
            ),
            (
                "src/Shop/Base.cs:Acme.Shop.Base.Run",
                "src/Shop/Base.cs:Acme.Shop.Base.Prepare",
                "invoke",
            ),
            (
                "src/Shop/Base.cs:Acme.Shop.Base.Run",
                "src/Shop/Base.cs:Acme.Shop.Base.Execute",
                "invoke",
            ),
            (
                "src/Shop/Engine.cs:Acme.Shop.Engine.Execute",
                "src/Shop/Util/Clamp.cs:Acme.Shop.Util.Clamp.Limit",
                "invoke",
            ),
            (
                "src/Shop/Engine.cs:Acme.Shop.Engine.Execute",
                "src/Shop/Engine.cs:Acme.Shop.Engine.Step",
                "invoke",
            ),
        }
    ),
)

KOTLIN = GraphCase(
    "kotlin",
    {
        "src/main/kotlin/shop/Base.kt": """package shop

abstract class Base {
    fun run(): Int {
        prepare()
        return execute()
    }

    protected fun prepare() {}

    protected abstract fun execute(): Int
}
""",
        "src/main/kotlin/shop/Engine.kt": """package shop

import shop.util.clamp

class Engine : Base(), Runner {
    override fun execute(): Int = clamp(step())

    private fun step() = 3
}

interface Runner {
    fun run(): Int
}
""",
        "src/main/kotlin/shop/util/Clamp.kt": """package shop.util

fun clamp(x: Int): Int = maxOf(0, x)
""",
    },
    frozenset(
        {
            (
                "src/main/kotlin/shop/Engine.kt",
                "src/main/kotlin/shop/util/Clamp.kt:clamp",
                "import",
            ),
            (
                "src/main/kotlin/shop/Engine.kt:Engine",
                "src/main/kotlin/shop/Base.kt:Base",
                "inherit",
            ),
            (
                "src/main/kotlin/shop/Engine.kt:Engine",
                "src/main/kotlin/shop/Engine.kt:Runner",
                "inherit",
            ),
            # `: Base()` calls Base's constructor.
            (
                "src/main/kotlin/shop/Engine.kt:Engine",
                "src/main/kotlin/shop/Base.kt:Base",
                "invoke",
            ),
            (
                "src/main/kotlin/shop/Base.kt:Base.run",
                "src/main/kotlin/shop/Base.kt:Base.prepare",
                "invoke",
            ),
            (
                "src/main/kotlin/shop/Base.kt:Base.run",
                "src/main/kotlin/shop/Base.kt:Base.execute",
                "invoke",
            ),
            (
                "src/main/kotlin/shop/Engine.kt:Engine.execute",
                "src/main/kotlin/shop/util/Clamp.kt:clamp",
                "invoke",
            ),
            (
                "src/main/kotlin/shop/Engine.kt:Engine.execute",
                "src/main/kotlin/shop/Engine.kt:Engine.step",
                "invoke",
            ),
        }
    ),
)

CASES = (PYTHON, JAVASCRIPT, TYPESCRIPT, GO, JAVA, RUST, C, CPP, RUBY, PHP, CSHARP, KOTLIN)
