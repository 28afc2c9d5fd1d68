"""Layer 1, the plugin system: what a plugin is (protocols), how it is found (registry),
how it follows a run (hooks), and the contract suites its tests subclass (testing).
"""
