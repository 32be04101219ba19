// States tofu could not persist. When a state write fails for good, tofu leaves errored.tfstate;
// the runner pushes it again, and when that fails too it uploads the file as its deployment's
// `state` artifact. Once the run has ended (its locks released), berthd pushes that state into
// the environment's state in berth's backend as a new version marked "rescued", unless the
// state moved on meanwhile, is another lineage, or lives in a storage berthd does not write:
// then the deployment's events say why and the artifact stays for an operator
// (`berth state push`). A push the store refuses for now (unreachable, or locked by the next
// run) is tried again on every pass; how each kept state was settled is recorded with its
// deployment, so that a restart neither loses a rescue nor repeats it.
#pragma once

#include <string>

#include "store/store.h"
#include "sys/logger.h"

namespace berth::server {

class KeptStates {
 public:
  KeptStates(store::Store& store, sys::Logger& log) : store_(store), log_(log) {}

  // Settles the state the run kept, if it kept one; false when it must be tried again.
  bool Settle(const std::string& org, const std::string& deployment, const std::string& run_id);
  // Settles what earlier attempts could not (the store was failing, berthd stopped): the
  // kept states of ended runs that are not settled yet.
  void SettlePending();

 private:
  store::Store& store_;
  sys::Logger& log_;
};

}  // namespace berth::server
