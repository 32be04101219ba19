// berthd's API as berthd builds it, over a dispatcher with no launchers: creating and reading
// go to the store, and cancel and approve go to the dispatcher, which cancels what has not
// started and refuses to approve (it has nothing to run the apply on).
#pragma once

#include "crypto/jws.h"
#include "server/api/api.h"
#include "server/dispatch/dispatcher.h"

namespace berth::server {

class ApiWithoutRunners {
 public:
  explicit ApiWithoutRunners(store::Store& store, const ApiOptions& options = {})
      : signer_(crypto::Ed25519Signer::Generate().value()),
        dispatcher_(store, launchers_, signer_, {}),
        api_(store, dispatcher_, options) {}
  ApiWithoutRunners(const ApiWithoutRunners&) = delete;
  ApiWithoutRunners& operator=(const ApiWithoutRunners&) = delete;

  net::ServerResponse Handle(const net::ServerRequest& request) const {
    return api_.Handle(request);
  }
  const Api& Served() const { return api_; }  // the API itself, for its routes

 private:
  crypto::Ed25519Signer signer_;
  const Launchers launchers_;
  Dispatcher dispatcher_;
  Api api_;
};

}  // namespace berth::server
