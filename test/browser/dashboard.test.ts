// The queue dashboard in headless Debian Chromium (the system browser; nothing is downloaded):
// sign in, see the sync queue's completed and failed jobs, retry a failed one from the UI, and
// check the retry put the batch back and synced it; open it with the credentials in the URL; and
// never load anything from anywhere but this server (it must work offline). Saves screenshots
// under test-results/.
import { mkdirSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { WorkerProcess } from '../../src/commands/worker.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { rowOf, untilSynced } from '../helpers/batches.ts';
import { writeClientsFile } from '../helpers/clients.ts';
import { waitFor } from '../helpers/harness.ts';
import { chromiumPath } from '../helpers/tools.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { BEARER, TOKEN, call, startTestWorker } from '../integration/http-helpers.ts';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SHOTS = 'test-results';

// Without a browser each test fails with the one-line fix (a failing beforeAll would instead
// report every test as skipped), and nothing else is started.
let executablePath: string | undefined;
let missingBrowser: unknown;
try {
  executablePath = chromiumPath();
} catch (error) {
  missingBrowser = error;
}

const harness = useHarness({ enabled: executablePath !== undefined });
// An institute's own staff get a client limited to their institutes (an operator or admin cannot be:
// the clients file refuses it, test/unit/api-clients.test.ts); such a client never sees the queues.
const clients = writeClientsFile([
  { name: 'on-call', role: 'operator' },
  { name: 'north-staff', role: 'reader', instituteIds: ['inst-north'] },
]);
afterAll(() => clients.remove());
const { h } = harness;
let w: WorkerProcess;
let browser: Browser;

beforeAll(async () => {
  if (executablePath === undefined) return;
  // API_TOKEN (an admin) signs in the first tests; the file's operator the read-only one.
  const worker = await startTestWorker(h, { API_CLIENTS_FILE: clients.path });
  w = worker;
  harness.defer(() => worker.stop());
  const launched = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  browser = launched;
  harness.defer(() => launched.close());
  mkdirSync(SHOTS, { recursive: true });
});

beforeEach(() => {
  if (missingBrowser !== undefined) throw missingBrowser;
});

const jobOf = (batchId: string) => jobIdFor({ instituteId: h.config.classroom.instituteId, batchId });
const post = (json: unknown) => call(`${w.url}/v1/batches`, { method: 'POST', headers: BEARER, json });

describe('queue dashboard in a browser', () => {
  it('does not open for a browser without the token', async () => {
    // Headless Chromium cannot show the sign-in dialog: an unanswered Basic challenge (no
    // credentials, or a wrong password) ends as the 401 page or as a failed navigation.
    for (const httpCredentials of [undefined, { username: 'operator', password: 'not-the-api-token' }]) {
      const context = await browser.newContext(httpCredentials ? { httpCredentials } : {});
      try {
        const page = await context.newPage();
        const outcome = await page.goto(`${w.url}/admin/queues`).then(
          (r) => String(r?.status()),
          (error: unknown) => String(error),
        );
        expect(outcome).toMatch(/^401$|ERR_INVALID_AUTH_CREDENTIALS/);
        expect(await page.getByText('batch-sync').count()).toBe(0);
      } finally {
        await context.close();
      }
    }
  });

  it('shows a client limited to some institutes no queue and no job, only why', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'north', password: clients.tokens['north-staff']! } });
    try {
      const page = await context.newPage();
      const response = await page.goto(`${w.url}/admin/queues`);
      expect(response?.status()).toBe(403);
      const text = await page.locator('body').innerText();
      expect(text).toContain('client \\"north-staff\\" (role reader) may not open the dashboard: that needs the operator or admin role');
      expect(text).not.toMatch(/batch-sync|reconcil/);
    } finally {
      await context.close();
    }
  });

  it('signs in, shows completed and failed sync jobs, and retries a failed one', async () => {
    // Two batches the remote rejects (failed jobs), then two that sync (completed jobs).
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected', count: 2 });
    expect(
      (
        await post([
          { batchId: 'ui-fail-1', name: 'UI fail 1', subject: 'Art' },
          { batchId: 'ui-fail-2', name: 'UI fail 2', subject: 'Art' },
        ])
      ).status,
    ).toBe(202);
    await waitFor(async () => (await w.runtime.queue.getJobCounts('failed')).failed === 2, 'two failed jobs');
    expect(
      (
        await post([
          { batchId: 'ui-ok-1', name: 'UI ok 1', subject: 'Art' },
          { batchId: 'ui-ok-2', name: 'UI ok 2', subject: 'Art' },
        ])
      ).status,
    ).toBe(202);
    await waitFor(async () => (await w.runtime.queue.getJobCounts('completed')).completed === 2, 'two completed jobs');

    // A browser signs in with HTTP Basic: any user name, the API token as password.
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN }, viewport: { width: 1400, height: 900 } });
    const traffic = watchTraffic(context);
    const page = await context.newPage();
    try {
      const response = await page.goto(`${w.url}/admin/queues`);
      expect(response?.status()).toBe(200);
      const sidebarLink = page.locator('a[href="/admin/queues/queue/batch-sync"]').first();
      await sidebarLink.waitFor();
      await expect.poll(() => page.getByText('reconcile', { exact: true }).count(), { timeout: 20_000 }).toBeGreaterThan(0);
      await page.screenshot({ path: `${SHOTS}/dashboard-overview.png` });

      await sidebarLink.click();
      // The status tabs (the sidebar's queue link also points at the current status, so match by name).
      const completedTab = page.getByRole('link', { name: /^COMPLETED/ });
      const failedTab = page.getByRole('link', { name: /^FAILED/ });
      await expect.poll(() => completedTab.innerText(), { timeout: 20_000 }).toMatch(/COMPLETED\s*2/);
      await expect.poll(() => failedTab.innerText(), { timeout: 20_000 }).toMatch(/FAILED\s*2/);

      await completedTab.click();
      await jobCard(page, jobOf('ui-ok-1')).waitFor();
      await jobCard(page, jobOf('ui-ok-2')).waitFor();

      await failedTab.click();
      await jobCard(page, jobOf('ui-fail-1')).waitFor();
      await jobCard(page, jobOf('ui-fail-2')).waitFor();
      await page.getByText('UnrecoverableError').first().waitFor();
      await page.screenshot({ path: `${SHOTS}/dashboard-failed.png` });

      // Retry ui-fail-1 with Bull Board's own button and its confirmation dialog.
      await retryButton(page, jobOf('ui-fail-1')).click();
      await page.getByText('Are you sure that you want to retry this job?').waitFor();
      const retried = page.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/${jobOf('ui-fail-1')}/retry`));
      await page.getByRole('button', { name: 'Confirm' }).click();
      expect((await retried).status()).toBe(204);

      // The retry put the batch back, in the operator lane: it syncs, and its job completes in the
      // background queue (operator work and backfill); the other failure stays.
      await untilSynced(h, 'ui-fail-1');
      await waitFor(async () => (await w.runtime.queue.background.getJobState(jobOf('ui-fail-1'))) === 'completed', 'retried job completed');
      expect((await rowOf(h, 'ui-fail-2'))?.state).toBe('failed');
      expect(h.sandbox.state().byName['UI fail 1']).toBe(1);

      // And the dashboard shows it (it polls): one failed left here, the retried job completed in the background queue.
      await expect.poll(() => failedTab.innerText(), { timeout: 20_000 }).toMatch(/FAILED\s*1/);
      await page.locator('a[href="/admin/queues/queue/batch-sync-background"]').first().click();
      await expect.poll(() => completedTab.innerText(), { timeout: 20_000 }).toMatch(/COMPLETED\s*1/);
      await completedTab.click();
      // The page re-renders as it polls, so the card is found again for each step; the screenshot
      // is of the full page, so nothing needs scrolling into view (a card scrolled to was at times
      // replaced mid-scroll: "Element is not attached to the DOM").
      await jobCard(page, jobOf('ui-fail-1'), 'batch-sync-background').waitFor();
      await page.screenshot({ path: `${SHOTS}/dashboard-after-retry.png`, fullPage: true });
      traffic.expectOnlyLocal();
    } finally {
      await context.close();
    }
  });

  it('shows an operator the failed jobs with no retry, clean or pause button (read-only), and the server refuses the change anyway', async () => {
    // Runs after the sign-in test, which leaves ui-fail-2 failed.
    const context = await browser.newContext({
      httpCredentials: { username: 'me', password: clients.tokens['on-call']! },
      viewport: { width: 1400, height: 900 },
    });
    const page = await context.newPage();
    try {
      expect((await page.goto(`${w.url}/admin/queues/queue/batch-sync?status=failed`))?.status()).toBe(200);
      await jobCard(page, jobOf('ui-fail-2')).waitFor();
      await page.screenshot({ path: `${SHOTS}/dashboard-operator-read-only.png` });
      expect(await retryButton(page, jobOf('ui-fail-2')).count()).toBe(0);
      expect(await page.getByRole('button', { name: /retry all|clean all|pause/i }).count()).toBe(0);
      // What the page no longer offers, the server refuses: the page's own request, with its cookie.
      const status = await page.evaluate(async (url) => (await fetch(url, { method: 'PUT' })).status, `${w.url}/admin/queues/api/queues/batch-sync/pause`);
      expect(status).toBe(403);
      expect(await w.runtime.queue.isPaused()).toBe(false);
    } finally {
      await context.close();
    }
  });

  it('opens with the credentials in the URL: reloads without them, signed in by a cookie that is not the token', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const traffic = watchTraffic(context);
    const page = await context.newPage();
    try {
      const withCredentials = w.url.replace('http://', `http://operator:${TOKEN}@`);
      expect((await page.goto(`${withCredentials}/admin/queues`))?.status()).toBe(200);
      // Not stuck on "Loading": the queues and their job counts are there.
      await page.locator('a[href="/admin/queues/queue/batch-sync"]').first().waitFor();
      await expect.poll(() => page.getByText('reconcile', { exact: true }).count(), { timeout: 20_000 }).toBeGreaterThan(0);
      // The address no longer holds the token (it would otherwise sit in the history and the page).
      expect(await page.evaluate('document.URL')).toBe(`${w.url}/admin/queues`);
      const cookies = await context.cookies(`${w.url}/admin/queues`);
      expect(cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, path: c.path }))).toEqual([
        { name: 'classroom_sync_dashboard', httpOnly: true, sameSite: 'Strict', path: '/admin/queues' },
      ]);
      expect(cookies[0]!.value).not.toContain(TOKEN);
      // The page's own API calls went out signed in by the cookie, from the address without credentials.
      expect(traffic.urls.some((u) => u.startsWith(`${w.url}/admin/queues/api/queues`))).toBe(true);
      await page.screenshot({ path: `${SHOTS}/dashboard-url-credentials.png` });
      traffic.expectOnlyLocal();
    } finally {
      await context.close();
    }
  });
});

/**
 * Every request a context makes, and every Content-Security-Policy refusal its pages report (a
 * refused request is never made, so it would not show among the requests).
 */
function watchTraffic(context: BrowserContext) {
  const urls: string[] = [];
  const refused: string[] = [];
  context.on('request', (request) => urls.push(request.url()));
  context.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) refused.push(message.text());
  });
  return {
    urls,
    expectOnlyLocal() {
      expect(urls.length).toBeGreaterThan(0);
      expect(urls.filter((u) => new URL(u).hostname !== '127.0.0.1')).toEqual([]);
      expect(refused).toEqual([]);
    },
  };
}

/** The card of one job, found by the link to its page. */
function jobCard(page: import('playwright-core').Page, jobId: string, queue = 'batch-sync') {
  return page.locator(`a[href*="/queue/${queue}/${jobId}"]`).first();
}

/** The retry (refresh icon) button in the header of that job's card. */
function retryButton(page: import('playwright-core').Page, jobId: string) {
  return page.locator(
    `xpath=//a[contains(@href, "/${jobId}")]/ancestor::div[.//button//*[contains(@class, "lucide-refresh-cw")]][1]//button[.//*[contains(@class, "lucide-refresh-cw")]]`,
  );
}
