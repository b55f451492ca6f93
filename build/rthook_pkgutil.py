"""PyInstaller run-time hook: lets pkgutil.iter_modules list the bundle's modules (the agents/
package is discovered that way) without importing pkgutil at every start.

PyInstaller's own hook (pyi_rth_pkgutil) registers its finder with pkgutil, importing pkgutil
and typing first: about 6 ms of every call, `--version` included. pkgutil asks a finder it has
no registration for to list modules through the finder's `iter_modules` method, so giving the
finder one does the same lazily: the modules in the PYZ archive under the finder's package,
then the plain files its fallback file finder sees.
"""


def _pyi_lazy_iter_modules():
    import pyimod02_importers

    def iter_modules(finder, prefix=""):
        import pkgutil

        node = pyimod02_importers.get_pyz_toc_tree()
        for part in filter(None, finder._pyz_entry_prefix.split(".")):
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            for name, entry in node.items():
                yield prefix + name, isinstance(entry, dict)  # a dict is a package
        if finder.fallback_finder is not None:
            yield from pkgutil.iter_importer_modules(finder.fallback_finder, prefix)

    pyimod02_importers.PyiFrozenFinder.iter_modules = iter_modules


_pyi_lazy_iter_modules()
del _pyi_lazy_iter_modules
