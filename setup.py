"""Where the packages come from; everything else is in pyproject.toml.

The rule book stays at the repository's top level (`rules/`, its one copy) and ships inside the
package as `advisor/data/rules/`: the package-dir mapping below tells setuptools to build that
folder from `rules/`, in a wheel and in an sdist alike (MANIFEST.in puts `rules/` in the sdist).
An editable install (`./bootstrap`) finds no `advisor/data/rules/` and reads `rules/` in place
(advisor.engine.rulebook.BUILTIN_RULES). Packages are found, not listed, so that a new subpackage
or rule folder cannot be left out of a wheel; data-only folders are namespace packages, as
`[tool.setuptools.packages.find]` would make them.
"""

from setuptools import find_namespace_packages, setup

RULES = "advisor.data.rules"

setup(
    packages=[*find_namespace_packages(include=["advisor", "advisor.*"]), RULES,
              *(f"{RULES}.{sub}" for sub in find_namespace_packages("rules"))],
    package_dir={RULES: "rules"},
    package_data={RULES: ["*.md"], **{f"{RULES}.{sub}": ["*.toml"]
                                      for sub in find_namespace_packages("rules")}},
)
