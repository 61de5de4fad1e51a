"""The desktop GUI (PySide6, pyvistaqt). Importing the package makes PySide6's check of each module
imported after it and VTK's search for its compiled modules cheap, and puts off pooch, which pyvista
imports at module level for downloads only (:mod:`jointmodeller.gui.interactor`; start-up, issue 18)."""

from jointmodeller.gui.interactor import defer_module, fast_pyside_feature_check, fast_vtk_module_lookup

fast_pyside_feature_check()
fast_vtk_module_lookup()
defer_module("pooch")
