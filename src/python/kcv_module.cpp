// kcv._kcv: the C++ engine (kcv::verify) for Python (issue 22, docs/python-api.md). One call in, the
// kcv.report/1 document out, as the CLI's --json writes it; the typed Result is python/kcv's.
// Isolation is the engine's own: candidates run in worker processes, never in the caller's.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "kcv/candidate.hpp"
#include "kcv/engine.hpp"
#include "kcv/kernelbench_session.hpp"
#include "kcv/gate.hpp"
#include "kcv/provenance.hpp"
#include "kcv/report.hpp"

#include "environment.hpp"  // tools/kcv: the CLI's mapping of KCV_* onto kcv::Settings

namespace py = pybind11;

namespace {

/// The options kcv.verify / kcv.verify_kernelbench pass, by keyword (the Python side validates),
/// and the settings of the environment as it is at the call (KCV_*, as for the CLI).
kcv::VerifyOptions options_from(const py::dict& d) {
  kcv::VerifyOptions o;
  o.settings = kcv::cli::settings_from_environment();
  auto str = [&](const char* key, std::string& out) {
    if (d.contains(key) && !d[key].is_none()) out = d[key].cast<std::string>();
  };
  str("op", o.op);
  str("candidate", o.candidate);
  str("backend", o.backend);
  str("kernelbench_problem", o.kernelbench.problem);
  str("kernelbench_solution", o.kernelbench.solution);
  str("python", o.kernelbench.python);
  str("workdir", o.workdir);
  if (d.contains("gates") && !d["gates"].is_none()) o.gates = d["gates"].cast<std::vector<std::string>>();
  if (d.contains("seed") && !d["seed"].is_none()) o.seed = d["seed"].cast<uint64_t>();
  if (d.contains("timeout") && !d["timeout"].is_none()) o.timeout_s = d["timeout"].cast<double>();
  if (d.contains("compile_grace") && !d["compile_grace"].is_none()) o.compile_grace_s = d["compile_grace"].cast<double>();
  if (d.contains("max_time") && !d["max_time"].is_none()) o.max_time_s = d["max_time"].cast<double>();
  if (d.contains("baseline")) o.kernelbench.baseline = d["baseline"].cast<bool>();
  if (d.contains("sandbox")) o.sandbox = d["sandbox"].cast<bool>();
  if (d.contains("timing")) o.timing = d["timing"].cast<bool>();
  if (d.contains("timing_reps") && !d["timing_reps"].is_none()) o.timing_reps = d["timing_reps"].cast<int>();
  return o;
}

/// The kcv.report/1 document as the JSON text the Python side parses.
std::string report_text(const kcv::Report& r) {
  return kcv::report_to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

PYBIND11_MODULE(_kcv, m) {
  m.doc() = "kcv's engine; use the kcv package (kcv.verify, kcv.verify_kernelbench), not this module";
  // NOTES: a setup error (bad usage, a candidate that does not build, a reference that cannot
  // load) is kcv.SetupError in Python with kcv's one-line message, as exit 2 is on the CLI.
  py::register_exception<kcv::SetupError>(m, "SetupError", PyExc_RuntimeError);
  m.def(
      "verify_json",
      [](const py::dict& d) {
        const kcv::VerifyOptions o = options_from(d);
        py::gil_scoped_release release;  // minutes of workers: other Python threads run meanwhile
        return report_text(kcv::verify(o));
      },
      py::arg("options"), "Runs the gates; the kcv.report/1 document as JSON text. Raises SetupError.");
  // A KernelBench problem kept warm (kcv.Session): options as verify_json's, problem/backend/
  // python/seed the session's.
  py::class_<kcv::KernelBenchSession>(m, "KernelBenchSession")
      .def(py::init([](const std::string& problem, const std::string& backend, const std::string& python,
                       std::optional<uint64_t> seed, std::size_t cache_bytes) {
             const kcv::Settings settings = kcv::cli::settings_from_environment();
             py::gil_scoped_release release;  // starts the reference server
             return std::make_unique<kcv::KernelBenchSession>(problem, backend, python, seed, cache_bytes, settings);
           }),
           py::arg("problem"), py::arg("backend"), py::arg("python") = "", py::arg("seed") = std::nullopt,
           py::arg("cache_bytes") = 0)
      .def("verify_json",
           [](kcv::KernelBenchSession& s, const std::string& solution, const py::dict& d) {
             const kcv::VerifyOptions o = options_from(d);
             py::gil_scoped_release release;
             return report_text(s.verify(solution, o));
           })
      .def_property_readonly("seed", &kcv::KernelBenchSession::seed)
      .def_property_readonly("reference_hits", &kcv::KernelBenchSession::reference_hits)
      .def_property_readonly("reference_misses", &kcv::KernelBenchSession::reference_misses);
  m.def("gate_ids", [] {
    std::vector<std::string> ids;
    for (const auto& g : kcv::all_gates()) ids.emplace_back(g->id());
    return ids;
  }, "the gate ids, in the order kcv runs and reports them");
  m.def("version", [] { return std::string(kcv::kcv_version()); }, "kcv's version (CMake KCV_VERSION)");
  m.def("commit", [] { return std::string(kcv::kcv_commit()); }, "the commit kcv was built from");
}
