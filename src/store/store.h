// The Store: everything berthd keeps, behind one interface, on SQLite (the embedded default)
// or PostgreSQL (several berthd processes may share it: nothing here is held only in memory).
//
// Configuration objects (projects, environment types, environments, runners, runner rules) are
// records: a JSON body plus the columns the database itself must index or enforce (the runner
// an environment is linked to, a rule's selector). Their rules live in the database: ids are
// unique per organization, two runner rules cannot share a selector, a runner that an
// environment uses cannot be deleted, an update names the version it read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/token_scopes.h"
#include "store/agent_store.h"
#include "store/deployment_data_store.h"
#include "store/deployment_store.h"
#include "store/replica_store.h"
#include "store/state_store.h"

namespace berth::crypto {
class KeyRing;
}

namespace berth::store {

enum class Kind { kProject, kEnvType, kEnvironment, kRunner, kRunnerRule };
std::string_view KindName(Kind kind);  // "project", "env-type", ...

struct Record {
  Kind kind = Kind::kProject;
  std::string org_id;
  std::string parent_id;  // the project of an environment; empty for the others
  std::string id;
  nlohmann::json body = nlohmann::json::object();
  // Indexed columns, by kind: environment {env_type_id, runner_id}, runner {runner_type,
  // storage_type}, runner rule {runner_id, project_id, env_type_id} (empty: any).
  std::map<std::string, std::optional<std::string>> columns;
  int64_t version = 0;     // 1 on create, +1 on each update
  int64_t created_at = 0;  // milliseconds since the epoch
  int64_t updated_at = 0;
};

struct ListQuery {
  std::string after;  // ids greater than this (the previous page's last id)
  int limit = 100;
  std::map<std::string, std::string> where;  // indexed column = value
};

struct Page {
  std::vector<Record> items;
  std::string next;  // empty when this is the last page
};

struct ApiToken {
  std::string id;
  std::string org_id;
  std::string description;
  int64_t created_at = 0;
  Scopes scopes = Scopes::Of({Scope::kAdmin});
  int64_t expires_at = 0;  // Unix ms; 0: never
  std::string created_by;  // the token that made it; empty for berthd's own
};

class Store {
 public:
  virtual ~Store() = default;

  // Organizations and their API tokens (only a hash of each secret is kept).
  virtual Result<bool> CreateOrganization(const std::string& id) = 0;  // false: it existed
  virtual Result<bool> OrganizationExists(const std::string& id) = 0;
  // The organization and its first token in one transaction: both or neither. false: the
  // organization existed, and nothing was written.
  virtual Result<bool> CreateOrganizationWithToken(const ApiToken& token,
                                                   const std::string& secret_hash) = 0;
  virtual Result<void> CreateToken(const ApiToken& token, const std::string& secret_hash) = 0;
  // Creates the token, or gives the one with its id a new secret (and its other fields).
  virtual Result<void> PutToken(const ApiToken& token, const std::string& secret_hash) = 0;
  virtual Result<ApiToken> FindToken(const std::string& secret_hash) = 0;               // kNotFound
  virtual Result<std::vector<ApiToken>> ListTokens(const std::string& org) = 0;         // by id
  virtual Result<void> DeleteToken(const std::string& org, const std::string& id) = 0;  // kNotFound

  // Records. Create: kAlreadyExists, or kFailedPrecondition when a referenced object (the
  // project, the runner, the environment type) is missing. Update and Delete with
  // expected_version >= 0 fail with kConflict when the record changed since it was read.
  // Delete of a runner that environments use: kFailedPrecondition.
  virtual Result<Record> Create(Record record) = 0;
  virtual Result<Record> Get(Kind kind, const std::string& org, const std::string& parent,
                             const std::string& id) = 0;
  virtual Result<Page> List(Kind kind, const std::string& org, const std::string& parent,
                            const ListQuery& query) = 0;
  virtual Result<Record> Update(Record record, int64_t expected_version) = 0;
  virtual Result<void> Delete(Kind kind, const std::string& org, const std::string& parent,
                              const std::string& id, int64_t expected_version) = 0;
  // Environments (project/id) linked to a runner, for the refusal to delete it.
  virtual Result<std::vector<std::string>> EnvironmentsUsingRunner(const std::string& org,
                                                                   const std::string& runner) = 0;
  // The secret stored under name; candidate is stored and returned when there is none yet
  // (of berthd processes starting at once on one database, the first one's candidate wins).
  virtual Result<std::string> EnsureSharedSecret(const std::string& name,
                                                 const std::string& candidate) = 0;
  // Seals again every value of the secret columns (store/sealing.h) that keys' current key did
  // not seal bound to its row; says how many it sealed and which keys the values use now.
  struct ResealReport {
    int64_t resealed = 0;
    // Values in clear left as they were (refused when read): sealed only when asked.
    int64_t left_in_clear = 0;
    std::set<std::string> keys_in_use;
    // A value was rewritten while it was being resealed (a berthd at work): with which key is
    // not known, so no key may be dropped yet.
    bool changed_meanwhile = false;
  };
  // seal_plaintext: seal values in clear too. Only the operator may ask it (once, after
  // upgrading from a berthd without encryption at rest): a value in clear may have been planted
  // by whoever could write the database.
  virtual Result<ResealReport> Reseal(const crypto::KeyRing& keys, bool seal_plaintext) = 0;
  // The TF states of berthd's own backend.
  virtual StateStore& States() = 0;
  // Deployments of environments.
  virtual DeploymentStore& Deployments() = 0;
  // Their bundles, logs and artifacts.
  virtual DeploymentDataStore& DeploymentData() = 0;
  // The berthd processes sharing the database, and their leases.
  virtual ReplicaStore& Replicas() = 0;
  // kubernetes-agent runners' command queues and what their agents report.
  virtual AgentStore& Agents() = 0;
};

// Opens the database named by url: a path or sqlite:PATH for SQLite, postgres:// or
// postgresql:// for PostgreSQL; applies pending migrations first. pool_size connections are
// opened (SQLite in WAL mode serves readers in parallel with one writer). keys seal the secret
// columns (store/sealing.h); without them values are written in clear (tests of the store).
Result<std::unique_ptr<Store>> OpenStore(const std::string& url, int pool_size = 4,
                                         std::shared_ptr<crypto::KeyRing> keys = nullptr);

// Every record of kind under parent, read page by page: for callers that need the whole list
// (the overview, the checks across a project's environments, the runner rules).
Result<std::vector<Record>> ListAll(Store& store, Kind kind, const std::string& org,
                                    const std::string& parent);

}  // namespace berth::store
