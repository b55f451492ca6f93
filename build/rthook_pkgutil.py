"""PyInstaller run-time hook: lets pkgutil.iter_modules list the bundle's modules (the agents/
package is discovered that way) without importing pkgutil at every start.

PyInstaller's own hook (pyi_rth_pkgutil) registers its finder with pkgutil, importing pkgutil
and typing first: about 6 ms of every call, `--version` included. pkgutil asks a finder it has
no registration for to list modules through the finder's `iter_modules` method, so giving the
finder one does the same lazily. In the bundle we ship (no PYZ archive) every module is a plain
file, which the finder's fallback file finder lists.
"""


def _pyi_lazy_iter_modules():
    import pyimod02_importers

    def iter_modules(finder, prefix=""):
        import pkgutil

        fallback = finder.fallback_finder
        return pkgutil.iter_importer_modules(fallback, prefix) if fallback is not None else iter(())

    pyimod02_importers.PyiFrozenFinder.iter_modules = iter_modules


_pyi_lazy_iter_modules()
del _pyi_lazy_iter_modules
