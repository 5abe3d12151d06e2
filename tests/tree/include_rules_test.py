#!/usr/bin/env python3
"""include_rules.py catches a plugin room including another, on a small tree made for it, and passes
the real tree. Usage: include_rules_test.py SOURCE_DIR (run by ctest as include_rules_test)."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import include_rules  # noqa: E402

SOURCE_DIR = "."


def tree(files):
    """A temporary source tree holding files, {path: text}; checked, then removed."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        return include_rules.check(root)[0]


def including(path, header):
    """A tree where path includes header, both present."""
    return tree({path: f'#include "{header}"\n', header: "#pragma once\n"})


class PluginRooms(unittest.TestCase):
    def test_tuner_including_profiler_or_online_is_reported(self):
        for header in ["plugin/profiler/y.h", "plugin/online/y.h"]:
            with self.subTest(header=header):
                errors = including("plugin/tuner/x.cpp", header)
                self.assertEqual(len(errors), 1)
                self.assertIn(f"plugin/tuner/x.cpp: includes {header}", errors[0])

    def test_other_rooms_reaching_across_are_reported(self):
        for path, header in [("plugin/profiler/x.cpp", "plugin/tuner/y.h"),
                             ("plugin/profiler/x.cpp", "plugin/online/y.h"),
                             ("plugin/online/x.cpp", "plugin/tuner/y.h"),
                             ("plugin/online/x.cpp", "plugin/profiler/y.h"),
                             ("plugin/x.cpp", "plugin/tuner/y.h"),
                             ("plugin/settings/x.cpp", "plugin/online/y.h")]:
            with self.subTest(path=path, header=header):
                errors = including(path, header)
                self.assertEqual(len(errors), 1)
                self.assertIn(f"{path}: includes {header}", errors[0])

    def test_contracts_abi_settings_and_own_room_pass(self):
        for path in ["plugin/tuner/x.cpp", "plugin/profiler/x.cpp", "plugin/online/x.cpp"]:
            for header in ["plugin/decision_log.h", "plugin/observation.h", "plugin/online_comm.h",
                           "plugin/online_contract.h", "abi/abi.h", "plugin/settings/settings.h",
                           path.rsplit("/", 1)[0] + "/z.h"]:
                with self.subTest(path=path, header=header):
                    self.assertEqual(including(path, header), [])

    def test_inputs_reached_only_from_online(self):
        self.assertEqual(including("plugin/online/x.cpp", "plugin/inputs/y.h"), [])
        for path in ["plugin/tuner/x.cpp", "plugin/profiler/x.cpp"]:
            with self.subTest(path=path):
                self.assertEqual(len(including(path, "plugin/inputs/y.h")), 1)
        self.assertEqual(len(including("plugin/inputs/x.cpp", "plugin/online/y.h")), 1)


class TheLab(unittest.TestCase):
    def test_the_lab_judges_the_product_and_nothing_depends_on_the_lab(self):
        self.assertEqual(including("lab/calibrate/x.cpp", "offline/sim/sim.h"), [])
        for path in ["offline/sim/x.cpp", "policy/x.cpp", "plugin/x.cpp"]:
            with self.subTest(path=path):
                errors = including(path, "lab/calibrate/calibrate.h")
                self.assertTrue(any("depends on lab/calibrate" in e for e in errors), errors)

    def test_real_tree_passes(self):
        errors, n = include_rules.check(SOURCE_DIR)
        self.assertEqual(errors, [])
        self.assertGreater(n, 100)


class DecisionLayers(unittest.TestCase):
    def test_a_layer_including_one_above_it_is_reported(self):
        for path, header in [("policy/x.cpp", "learner/learner.h"), ("policy/x.cpp", "learned/learned.h"),
                             ("learner/x.cpp", "learned/learned.h"), ("features/x.cpp", "policy/policy.h")]:
            with self.subTest(path=path, header=header):
                errors = including(path, header)
                self.assertTrue(any("sits below" in e for e in errors), errors)

    def test_a_layer_including_one_below_it_passes(self):
        for path, header in [("learned/x.cpp", "learner/learner.h"), ("learner/x.cpp", "policy/policy.h"),
                             ("learned/x.cpp", "policy/policy.h")]:
            with self.subTest(path=path, header=header):
                self.assertEqual(including(path, header), [])


if __name__ == "__main__":
    SOURCE_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "."
    unittest.main()
