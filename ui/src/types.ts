// The shapes of docs/openapi.json that the dashboard reads (only the fields it shows).

export interface Project {
  id: string;
  display_name?: string;
}

export interface Environment {
  id: string;
  project_id: string;
  display_name?: string;
  runner_id: string | null;
}

export interface Transition {
  state: string;
  at: string;
  reason?: string;
}

export interface DeploymentEvent {
  run_id: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  count: number;
  first_at: string;
  last_at: string;
}

export interface PlanSummary {
  hash: string;
  add: number;
  change: number;
  destroy: number;
  replace?: number;
}

export interface Deployment {
  id: string;
  project_id: string;
  env_id: string;
  sequence: number;
  state: string;
  op: string;
  transitions: Transition[];
  events?: DeploymentEvent[];
  plan?: PlanSummary;
  plan_only?: boolean;
  result?: { succeeded?: boolean; error?: { kind: string; message: string } };
  created_at: string;
  updated_at: string;
  created_by?: string | null;
}

export interface Output {
  value?: unknown;
  sensitive?: boolean;
  redacted?: boolean;
  sealed_value?: string;
}

export const kEndedStates = ['succeeded', 'failed', 'cancelled'];

// GET /orgs/{org}/overview: every environment with what the overview shows, in one request.
export interface DeploymentBrief {
  id: string;
  state: string;
  op: string;
  created_at: string;
  updated_at: string;
}

export interface EnvironmentOverview {
  project_id: string;
  id: string;
  display_name?: string;
  runner_id: string | null;
  last_deployment: DeploymentBrief | null;
  holder: DeploymentBrief | null; // the deployment that holds its queue, if one does
  queued: number;
}

export interface StateVersion {
  version: number;
  size: number;
  sha256: string;
  run_id: string;
  created_at: string;
  deleted: boolean;
}

export interface StateSummary {
  versions: number;
  lock: { id: string; run_id: string | null; operation?: string; who?: string; created_at: string; age_seconds: number } | null;
  history: { action: string; actor: string; detail: string; at: string }[];
}

export interface Runner {
  id: string;
  description?: string;
  runner_configuration: { type: string };
  state_storage_configuration?: { type: string };
  version: number;
}

export interface RunnerRule {
  id: string;
  runner_id: string;
  project_id?: string | null;
  env_type_id?: string | null;
  version: number;
}

export interface ChangedAttribute {
  name: string;
  before?: string;
  after?: string;
  sensitive: boolean;
  unknown: boolean;
}

export interface PlannedChange {
  address: string;
  actions: string[];
  attributes: ChangedAttribute[];
  importing?: boolean;
}

export interface ChangeListDocument {
  resource_changes: PlannedChange[];
  output_changes: PlannedChange[];
}
