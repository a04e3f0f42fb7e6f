"""Which entities the API index calls public, by each language's convention."""

from __future__ import annotations

import pytest

from worker.docs.api_index import is_public


@pytest.mark.parametrize(
    ("path", "name", "signature", "public"),
    [
        ("src/App.php", "App.run", "public function run(): void", True),
        ("src/App.php", "App.handle", "function handle($request)", True),
        ("src/App.php", "App.resolve", "private function resolve($x): callable", False),
        ("src/App.php", "App.hook", "protected static function hook(): void", False),
        ("src/App.php", "App", "final class App extends Proxy", True),
        ("lib/app.rb", "App.route", "def route(path)", True),
        ("lib/app.rb", "App._cache", "def _cache", False),
        ("src/Call.kt", "Call.execute", "override fun execute(): Response", True),
        ("src/Call.kt", "Call.run", "private fun run(x: Int) = x", False),
        ("src/Call.kt", "Call.cache", "internal fun cache()", False),
        ("src/Engine.cs", "Engine.Run", "public int Run()", True),
        ("src/Engine.cs", "Engine.Step", "int Step() => 1;", False),
        ("src/lib.rs", "parse", "pub fn parse(input: &str)", True),
        ("src/lib.rs", "helper", "fn helper()", False),
    ],
)
def test_public_by_language(path: str, name: str, signature: str, public: bool) -> None:
    """PHP and Kotlin are public unless said otherwise; C# and Rust only when they say so."""
    assert is_public(path, name, signature) is public
