// A real `berth up` for the browser tests (SQLite, local runners, the real tofu), and the
// berth CLI against it, as a user runs them.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through ctest (scripts/test)`);
  return value;
}

// The sanitizers' settings go through to the (sanitized, in the ci build) berth; nothing else
// of this environment does.
const sanitizers = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => /^(ASAN|LSAN|UBSAN)_OPTIONS$/.test(name)));

export class BerthUp {
  static async start() {
    const cli = required('BERTH_CLI_BIN');
    const tofu = required('BERTH_TEST_TOFU');
    const mirror = required('BERTH_TEST_PROVIDER_MIRROR');
    const dir = mkdtempSync(join(tmpdir(), 'berth-ui-test-'));
    const env = { ...sanitizers, PATH: `${dirname(tofu)}:/usr/bin:/bin`, HOME: dir };
    const child = spawn(cli, ['up', `--data-dir=${dir}`, '--listen=127.0.0.1:0', `--providers=${mirror}`],
                        { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (d) => (log += d));
    child.stderr.on('data', (d) => (log += d));
    for (let i = 0; i < 600 && !log.includes('stop with Ctrl-C'); i++) {
      if (child.exitCode !== null) throw new Error(`berth up ended: ${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!existsSync(join(dir, 'berthd.url'))) throw new Error(`berth up did not start: ${log}`);
    const up = new BerthUp(cli, dir, child, () => log);
    up.url = readFileSync(join(dir, 'berthd.url'), 'utf8').trim();
    up.adminToken = readFileSync(join(dir, 'admin-token'), 'utf8').trim();
    return up;
  }

  constructor(cli, dir, child, log) {
    this.cli = cli;
    this.dir = dir;
    this.child = child;
    this.log = log;
  }

  // `berth ARGS...` against this berth up; its stdout, or a thrown error with its output.
  async berth(...args) {
    const env = { ...sanitizers, BERTH_DATA_DIR: this.dir, HOME: this.dir, PATH: '/usr/bin:/bin' };
    try {
      const { stdout } = await run(this.cli, args, { env, maxBuffer: 64 << 20 });
      return stdout;
    } catch (e) {
      throw new Error(`berth ${args.join(' ')} failed: ${e.stdout}${e.stderr}`);
    }
  }

  // A request to the API as the admin token; a 429 waits as long as Retry-After says.
  async api(method, path, body) {
    let response;
    for (;;) {
      response = await fetch(`${this.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${this.adminToken}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (response.status !== 429) break;
      await response.text();
      await new Promise((r) => setTimeout(r, 1000 * Number(response.headers.get('retry-after') ?? 1)));
    }
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  async stop() {
    this.child.kill('SIGTERM');
    await new Promise((r) => (this.child.exitCode !== null ? r() : this.child.on('exit', r)));
    const log = this.log();
    rmSync(this.dir, { recursive: true, force: true });
    if (this.child.exitCode !== 0) throw new Error(`berth up exited ${this.child.exitCode}: ${log}`);
    if (log.includes('Sanitizer')) throw new Error(`berth up: ${log}`);
  }
}
