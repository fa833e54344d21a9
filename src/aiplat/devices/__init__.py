"""Device binding: CDI specs, runtime configuration, GPU sharing and MIG plans, accounting.

Layout (pure core, I/O at the edges):
- ``cdi``        pure: CDI model rules — names, minimum ``cdiVersion``, the reference loader's
                 checks, building specs from host facts, serialising. No file or host access:
                 host facts (device stat, paths that exist) are passed in.
- ``host``       I/O: stat of device nodes, the linker cache, GPU identities (nvidia-smi XML or
                 the node inventory's JSON), reading and writing spec files.
- ``verify``     pure comparison of what a container shows against what a spec claims, plus
                 the one I/O edge that runs Podman.
- ``runtime``    containerd / CRI-O / Podman config merges (tomlkit keeps comments and order).
- ``mig``        pure MIG layout planner over the catalog's profiles and placements.
- ``sharing``    pure model of sharing strategies and the configs they need.
- ``accounting`` pure GPU-hour and slice-hour sums from allocation records.
"""
