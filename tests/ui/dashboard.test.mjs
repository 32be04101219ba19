// berth's dashboard in Debian's Chromium, driven by Playwright, against a real `berth up` with
// real deployments of the real tofu. One berth up and one browser serve every test here.
// Screenshots of each main page go to build/ui-screenshots/.
import { after, before, describe, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { BerthUp, required } from './berth_up.mjs';

const source = new URL('../../', import.meta.url).pathname;
const ui = createRequire(join(source, 'ui/package.json'));
const { chromium } = ui('playwright-core');
const axeSource = readFileSync(ui.resolve('axe-core/axe.min.js'), 'utf8');
const screenshots = join(source, 'build/ui-screenshots');
const kDesktop = { width: 1280, height: 800 };
const kPhone = { width: 390, height: 844 };

let up;
let browser;

before(async () => {
  mkdirSync(screenshots, { recursive: true });
  up = await BerthUp.start();
  browser = await chromium.launch({
    executablePath: process.env.BERTH_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox'], // root in CI: Chromium's own sandbox needs an unprivileged user
  });
});

after(async () => {
  await browser?.close();
  await up?.stop();
});

// A page logged in through the link `berth ui` prints; CSP violations and page errors are
// collected so that a test can assert there were none.
async function loggedIn(viewport = kDesktop, { bypassCSP = false } = {}) {
  const context = await browser.newContext({ viewport, bypassCSP });
  const page = await context.newPage();
  page.problems = [];
  page.on('console', (m) => { if (m.type() === 'error') page.problems.push(m.text()); });
  page.on('pageerror', (e) => page.problems.push(String(e)));
  page.on('response', (r) => { if (r.status() >= 400) page.problems.push(`${r.status()} ${r.url()}`); });
  const link = (await up.berth('ui')).trim();
  assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/ui\/login#org=default&code=/);
  await page.goto(link);
  // The link alone logs nobody in: one click does.
  await page.getByRole('button', { name: 'Log in to default' }).click();
  await page.getByRole('heading', { name: 'Environments' }).waitFor();
  assert.equal(new URL(page.url()).hash, '#/', 'the login code is gone from the address bar');
  return page;
}

// A test that fails leaves what its pages showed in the log (CI keeps nothing else): each open
// page's address, its text and the problems it saw, and a screenshot beside the others.
function test(name, body) {
  nodeTest(name, async () => {
    try {
      await body();
    } catch (failure) {
      await reportOpenPages(name);
      throw failure;
    }
  });
}

async function reportOpenPages(testName) {
  const slug = testName.replace(/[^a-z0-9]+/gi, '-').slice(0, 40);
  let n = 0;
  for (const context of browser.contexts()) {
    for (const page of context.pages()) {
      const text = await page.evaluate(() => document.body?.innerText ?? '').catch(String);
      console.log(`--- page ${n} of failed test "${testName}": ${page.url()}\n${text.slice(0, 3000)}` +
                  `\n--- its problems: ${JSON.stringify(page.problems ?? [])}`);
      await shoot(page, `failed-${slug}-${n++}`).catch(() => {});
    }
    await context.close();
  }
}

async function deploy(module, env, ...flags) {
  const out = await up.berth('deploy', join(source, 'examples', module), '--env', env, ...flags);
  const id = /deployment (d-[a-z0-9]+)/.exec(out)?.[1];
  assert.ok(id, out);
  return id;
}

async function shoot(page, name) {
  await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });
}

// The elements that stick out past the viewport's right edge (none, when the layout holds).
async function overflowing(page) {
  return page.evaluate(() => {
    if (document.documentElement.scrollWidth <= innerWidth) return [];
    return [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > innerWidth && !e.closest('.log-box'))
      .map((e) => `<${e.tagName.toLowerCase()} class="${e.className}">${e.textContent.slice(0, 60)}`);
  });
}

async function axeViolations(page) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(() => globalThis.axe.run({ resultTypes: ['violations'] }));
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

describe('the dashboard', () => {
  test('a plan waits, its log and changes are read, Approve applies exactly it, outputs show', async () => {
    const id = await deploy('slow', 'dev', '--var', 'seconds=3', '--require-approval');
    const page = await loggedIn();
    const row = page.getByRole('row', { name: /dev/ });
    await row.getByText('waiting approval').waitFor();
    await shoot(page, 'overview-desktop');

    await row.getByRole('link', { name: /waiting approval/ }).click();
    await page.getByRole('heading', { name: 'Plan', exact: true }).waitFor();
    assert.equal(await page.locator('.plan-add').textContent(), '1 to add');
    await page.getByRole('log').getByText(/Plan: 1 to add/).waitFor();
    // The change list: the resource, its action, its attribute's value to be.
    const change = page.locator('details.change', { hasText: 'terraform_data.slow' });
    await change.getByText('create').waitFor();
    assert.equal(await change.getByRole('row', { name: /^input/ }).getByRole('cell').last().textContent(), '3');
    assert.equal(await change.getByRole('row', { name: /^id/ }).getByRole('cell').last().textContent(),
                 '(known after apply)');
    const hash = (await up.api('GET', `/orgs/default/deployments/${id}`)).plan.hash;
    assert.equal(await page.locator('section .hash').textContent(), hash);
    await shoot(page, 'deployment-waiting-desktop');

    // Keyboard only: Tab to Approve, Enter opens the dialog, Enter on its default confirms.
    await page.getByRole('button', { name: 'Approve', exact: true }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Apply exactly this plan?' });
    await dialog.waitFor();
    assert.match(await dialog.textContent(), new RegExp(hash));
    await shoot(page, 'approve-dialog-desktop');
    await dialog.getByRole('button', { name: 'Approve and apply' }).click();

    // The apply's log arrives while it runs (it sleeps 3 s after this line).
    await page.getByRole('log').getByText('berth-slow-started').first().waitFor({ timeout: 60000 });
    const whileLogged = (await up.api('GET', `/orgs/default/deployments/${id}`)).state;
    assert.notEqual(whileLogged, 'succeeded', 'the line was shown before the apply ended');
    await page.locator('.badge.state-succeeded').first().waitFor({ timeout: 60000 });
    await page.getByRole('heading', { name: 'Outputs' }).waitFor();
    assert.equal(await page.locator('.outputs dt').first().textContent(), 'seconds');
    assert.equal(await page.locator('.outputs dd').first().textContent(), '3');
    await shoot(page, 'deployment-applied-desktop');
    assert.deepEqual(page.problems, []);
    await page.context().close();
  });

  test('a sensitive output stays hidden until revealed, and the plan file downloads', async () => {
    const id = await deploy('secret', 'secrets', '--var', 'token=s3cret-browser-value', '--require-approval', '--auto-approve');
    const page = await loggedIn();
    await page.goto(`${up.url}/ui/#/deployments/${id}`);
    await page.getByRole('heading', { name: 'Outputs' }).waitFor();
    assert.equal(await page.getByText('s3cret-browser-value').count(), 0, 'hidden until asked for');
    assert.equal(await page.locator('.outputs').getByText('"s3cret-browser-value"').count(), 0);
    await page.getByRole('button', { name: 'Reveal token' }).click();
    await page.locator('.outputs').getByText('"s3cret-browser-value"').waitFor();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download the plan file' }).click(),
    ]);
    const plan = readFileSync(await download.path());
    assert.equal(plan.subarray(0, 2).toString(), 'PK', 'a plan file is a zip');
    await page.context().close();
  });

  test('a read-only user logs in with a token and sees no button it cannot use', async () => {
    const id = await deploy('hello', 'staging', '--require-approval');
    const token = (await up.berth('token', 'create', '--scope', 'read')).trim();
    const context = await browser.newContext({ viewport: kDesktop });
    const page = await context.newPage();
    await page.goto(`${up.url}/ui/`);
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Environments' }).waitFor();
    await page.goto(`${up.url}/ui/#/deployments/${id}`);
    await page.getByRole('heading', { name: 'Plan', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve', exact: true }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Cancel', exact: true }).count(), 0);
    await shoot(page, 'deployment-read-only-desktop');

    // Revoked behind its back (as an expiry would end it), the session's next call finds out
    // and the page goes back to its login form.
    const session = await page.evaluate(async () => (await fetch('/orgs/default/session')).json());
    await up.api('DELETE', `/orgs/default/tokens/${session.id}`);
    await page.getByRole('button', { name: 'Log in' }).waitFor({ timeout: 15000 });
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Environments' }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    const afterLogout = await page.evaluate(async () => (await fetch('/orgs/default/session')).status);
    assert.equal(afterLogout, 401, 'the session is gone, not only the page');
    await context.close();
  });

  test('a change without the session CSRF token is refused, and with it goes through', async () => {
    const id = await deploy('hello', 'qa', '--require-approval');
    const page = await loggedIn();
    const statuses = await page.evaluate(async (id) => {
      const cancel = (headers) => fetch(`/orgs/default/deployments/${id}/cancel`, { method: 'POST', headers });
      const session = await (await fetch('/orgs/default/session')).json();
      return [
        (await cancel({})).status,
        (await cancel({ 'X-Berth-CSRF': 'forged' })).status,
        (await cancel({ 'X-Berth-CSRF': session.csrf_token })).status,
      ];
    }, id);
    assert.deepEqual(statuses, [403, 403, 200]);
    await page.context().close();
  });

  test('Cancel asks first, then cancels the deployment that waits', async () => {
    const id = await deploy('hello', 'cancelled', '--require-approval');
    const page = await loggedIn();
    await page.goto(`${up.url}/ui/#/deployments/${id}`);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this deployment?' });
    await dialog.getByRole('button', { name: 'Back' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await up.api('GET', `/orgs/default/deployments/${id}`)).state, 'waiting_approval');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await dialog.getByRole('button', { name: 'Cancel deployment' }).click();
    await page.locator('.summary .badge.state-cancelled').waitFor();
    assert.equal((await up.api('GET', `/orgs/default/deployments/${id}`)).state, 'cancelled');
    await page.context().close();
  });

  test('the keyboard alone reaches a deployment, its dialog and its log', async () => {
    const id = await deploy('hello', 'keyboard', '--require-approval');
    const page = await loggedIn();
    await page.getByRole('row', { name: /keyboard/ }).waitFor();
    // Tab (never a click) until the focus is on the environment's last deployment.
    const tabTo = async (wanted) => {
      for (let i = 0; i < 200; i++) {
        await page.keyboard.press('Tab');
        if (await page.evaluate(wanted)) return;
      }
      assert.fail(`Tab never reached ${wanted}`);
    };
    await tabTo(`document.activeElement?.getAttribute('href') === '#/deployments/${id}' &&
                 document.activeElement.textContent.includes('waiting approval')`);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await tabTo("document.activeElement?.textContent === 'Cancel'");
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Cancel this deployment?' });
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    // The log takes the focus, so that arrows and Page Up scroll it.
    await tabTo("document.activeElement?.getAttribute('role') === 'log'");
    assert.equal((await up.api('GET', `/orgs/default/deployments/${id}`)).state, 'waiting_approval');
    await page.context().close();
  });

  test('the layout holds on a phone', async () => {
    await deploy('hello', 'phone', '--require-approval');
    const page = await loggedIn(kPhone);
    await page.getByRole('row', { name: /phone/ }).waitFor();
    assert.deepEqual(await overflowing(page), [], 'the overview fits the phone');
    await shoot(page, 'overview-phone');
    await page.getByRole('row', { name: /phone/ }).getByRole('link').last().click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    assert.deepEqual(await overflowing(page), [], 'the deployment page fits the phone');
    await shoot(page, 'deployment-phone');
    await page.context().close();
  });

  test('axe finds no serious accessibility violation on the main pages', async () => {
    // axe is injected as a script, which the dashboard's policy rightly refuses: this context
    // alone bypasses it.
    await deploy('hello', 'a11y', '--require-approval');
    const page = await loggedIn(kDesktop, { bypassCSP: true });
    await page.getByRole('row', { name: /a11y/ }).waitFor();
    assert.deepEqual(await axeViolations(page), [], 'overview');
    await page.getByRole('row', { name: /a11y/ }).getByRole('link').last().click();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    assert.deepEqual(await axeViolations(page), [], 'deployment');
    await page.context().close();
    const login = await (await browser.newContext({ bypassCSP: true })).newPage();
    await login.goto(`${up.url}/ui/login`);
    await login.getByRole('button', { name: 'Log in' }).waitFor();
    assert.deepEqual(await axeViolations(login), [], 'login');
    await login.context().close();
  });

  test('a login link opened and left spends nothing: the click that follows it logs in', async () => {
    const link = (await up.berth('ui')).trim();
    const preview = await (await browser.newContext()).newPage();
    await preview.goto(link);
    await preview.getByRole('button', { name: 'Log in to default' }).waitFor();
    assert.equal(new URL(preview.url()).hash, '', 'the code is gone from the address bar');
    await preview.context().close();
    const page = await (await browser.newContext()).newPage();
    await page.goto(link);
    await page.getByRole('button', { name: 'Log in to default' }).click();
    await page.getByRole('heading', { name: 'Environments' }).waitFor();
    await page.context().close();
  });

  test('an admin edits runners as the API takes them and sees its refusal field by field', async () => {
    const page = await loggedIn();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Runners' }).click();
    await page.getByRole('heading', { name: 'Runners' }).waitFor();
    await page.getByRole('button', { name: 'New runner' }).click();
    const editor = page.getByRole('dialog', { name: 'New runner' });
    const json = editor.getByRole('textbox');
    await json.fill(JSON.stringify({ id: 'ui-made', runner_configuration: { type: 'no-such-type' } }));
    await editor.getByRole('button', { name: 'Save' }).click();
    const refusal = editor.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.textContent(), /\$\.runner_configuration\.type/);
    await shoot(page, 'runner-refused-desktop');
    await json.fill(JSON.stringify({ id: 'ui-made', description: 'made in the browser',
                                     runner_configuration: { type: 'local' },
                                     state_storage_configuration: { type: 'berth' } }));
    await editor.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('row', { name: /ui-made/ }).getByText('made in the browser').waitFor();
    const saved = await up.api('GET', '/orgs/default/runners/ui-made');
    assert.equal(saved.description, 'made in the browser');
    await shoot(page, 'runners-desktop');
    await page.context().close();
  });

  test('an admin rolls a state back to an older version, confirmed', async () => {
    await deploy('hello', 'states', '--var', 'name=first', '--auto-approve');
    await deploy('hello', 'states', '--var', 'name=second', '--auto-approve');
    const path = '/orgs/default/projects/default/envs/states/state/versions';
    const before = (await up.api('GET', path)).items;
    assert.ok(before.length >= 2, JSON.stringify(before));
    const oldest = before[0].version;
    const page = await loggedIn();
    await page.goto(`${up.url}/ui/#/envs/default/states`);
    await page.getByRole('heading', { name: 'State', exact: true }).waitFor();
    await page.getByRole('button', { name: `Roll back to ${oldest}`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Make version ${oldest} the newest?` });
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const after = (await up.api('GET', path)).items;
    assert.equal(after.length, before.length + 1);
    assert.equal(after.at(-1).sha256, before[0].sha256, 'the newest is the old version again');
    await page.getByRole('row', { name: new RegExp(`^${after.at(-1).version} newest`) }).waitFor();
    await shoot(page, 'environment-desktop');
    await page.context().close();
  });

  test('a finished log of 100,000 lines loads with only the lines in view in the page', async () => {
    const id = await deploy('noisy', 'noisy', '--var', 'bytes=1700000', '--auto-approve').catch((e) => {
      const found = /deployment (d-[a-z0-9]+)/.exec(String(e));
      assert.ok(found, String(e)); // the module fails on purpose, after its noise
      return found[1];
    });
    const page = await loggedIn();
    const started = Date.now();
    await page.goto(`${up.url}/ui/#/deployments/${id}`);
    await page.getByText(/^1\d{5} lines$/).waitFor({ timeout: 60000 });
    console.log(`a log of ${await page.getByText(/^\d+ lines$/).textContent()} shown ${Date.now() - started} ms after navigation`);
    assert.ok(await page.locator('.log-line').count() < 200, 'only the rows in view are in the DOM');
    const search = page.getByRole('searchbox', { name: 'Search the log' });
    await search.fill('berth-noisy-last-line');
    await search.press('Enter');
    await page.locator('.log-current', { hasText: 'berth-noisy-last-line' }).waitFor();
    await shoot(page, 'log-search-desktop');
    await page.context().close();
  });

  test('the overview of 500 environments renders them all', async () => {
    await up.api('POST', '/orgs/default/projects', { id: 'fleet' });
    const types = await up.api('GET', '/orgs/default/env-types');
    const type = types.items[0].id;
    for (let i = 0; i < 500; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) =>
        up.api('POST', '/orgs/default/projects/fleet/envs', { id: `env-${String(i + j).padStart(3, '0')}`, env_type_id: type })));
    }
    const page = await loggedIn();
    const started = Date.now();
    await page.getByRole('row', { name: /env-499/ }).waitFor();
    const took = Date.now() - started;
    assert.ok(await page.locator('tbody tr').count() >= 500);
    // Reported, never asserted: a timing in a test fails on a loaded machine.
    console.log(`overview of ${await page.locator('tbody tr').count()} environments rendered ${took} ms after login`);
    await page.context().close();
  });
});
