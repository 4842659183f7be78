#pragma once
// Hardware files where a catalog node type's name goes (scenario/catalog_lookup.cpp):
// `cluster: FILE.yaml` (or .yml, .json; beside the scenario or from the working directory)
// and `--set cluster=FILE.yaml` read that file as the whole cluster mapping, and the name
// `host` can be made to stand for a calibrated host file (`twinsim calibrate`'s output).
#include <string>

namespace twinsim {

// From now on in this process the catalog name `host` stands for this hardware file;
// empty: the catalog's own placeholder entry. The command line names the calibrated host
// file here when there is one (app/host_calibration.hpp).
void set_host_cluster_file(const std::string& file);

}  // namespace twinsim
