// The queue dashboard in headless Debian Chromium (the system browser; nothing is downloaded):
// sign in, see the sync queue's completed and failed jobs, retry a failed one from the UI, and
// check the retry put the batch back and synced it. Saves screenshots under test-results/.
import { mkdirSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkerProcess } from '../../src/commands/worker.ts';
import { jobIdFor } from '../../src/sync/keys.ts';
import { createHarness, type Harness, waitFor } from '../helpers/harness.ts';
import { BEARER, TOKEN, call, rowOf, startTestWorker } from '../integration/http-helpers.ts';

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

let h: Harness;
let w: WorkerProcess;
let browser: Browser;

beforeAll(async () => {
  h = await createHarness();
  w = await startTestWorker(h);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
  await w?.stop();
  await h?.close();
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
        const outcome = await page.goto(`${w.url}/admin/queues`).then((r) => String(r?.status()), (error: unknown) => String(error));
        expect(outcome).toMatch(/^401$|ERR_INVALID_AUTH_CREDENTIALS/);
        expect(await page.getByText('batch-sync').count()).toBe(0);
      } finally {
        await context.close();
      }
    }
  });

  it('signs in, shows completed and failed sync jobs, and retries a failed one', async () => {
    // Two batches the remote rejects (failed jobs), then two that sync (completed jobs).
    h.sandbox.faults.enqueue({ operation: 'addClass', fault: 'bodyRejected', count: 2 });
    expect((await post([{ batchId: 'ui-fail-1', name: 'UI fail 1', subject: 'Art' }, { batchId: 'ui-fail-2', name: 'UI fail 2', subject: 'Art' }])).status).toBe(202);
    await waitFor(async () => (await w.runtime.queue.getJobCounts('failed')).failed === 2, 'two failed jobs');
    expect((await post([{ batchId: 'ui-ok-1', name: 'UI ok 1', subject: 'Art' }, { batchId: 'ui-ok-2', name: 'UI ok 2', subject: 'Art' }])).status).toBe(202);
    await waitFor(async () => (await w.runtime.queue.getJobCounts('completed')).completed === 2, 'two completed jobs');

    // A browser signs in with HTTP Basic: any user name, the API token as password.
    const context = await browser.newContext({ httpCredentials: { username: 'operator', password: TOKEN }, viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    try {
      const response = await page.goto(`${w.url}/admin/queues`);
      expect(response?.status()).toBe(200);
      const sidebarLink = page.locator('a[href="/admin/queues/queue/batch-sync"]').first();
      await sidebarLink.waitFor();
      await expect.poll(() => page.getByText('reconcile', { exact: true }).count()).toBeGreaterThan(0);
      await page.screenshot({ path: `${SHOTS}/dashboard-overview.png` });

      await sidebarLink.click();
      // The status tabs (the sidebar's queue link also points at the current status, so match by name).
      const completedTab = page.getByRole('link', { name: /^COMPLETED/ });
      const failedTab = page.getByRole('link', { name: /^FAILED/ });
      await expect.poll(() => completedTab.innerText()).toMatch(/COMPLETED\s*2/);
      await expect.poll(() => failedTab.innerText()).toMatch(/FAILED\s*2/);

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

      // The retry put the batch back: it syncs, and its job completes; the other failure stays.
      await waitFor(async () => (await rowOf(h, 'ui-fail-1'))?.state === 'synced', 'ui-fail-1 synced after the retry');
      await waitFor(async () => (await w.runtime.queue.getJobState(jobOf('ui-fail-1'))) === 'completed', 'retried job completed');
      expect((await rowOf(h, 'ui-fail-2'))?.state).toBe('failed');
      expect(h.sandbox.state().byName['UI fail 1']).toBe(1);

      // And the dashboard shows it (it polls): one failed left, the retried job among the completed.
      await expect.poll(() => failedTab.innerText(), { timeout: 20_000 }).toMatch(/FAILED\s*1/);
      await completedTab.click();
      await jobCard(page, jobOf('ui-fail-1')).waitFor();
      await expect.poll(() => completedTab.innerText(), { timeout: 20_000 }).toMatch(/COMPLETED\s*3/);
      await jobCard(page, jobOf('ui-fail-1')).scrollIntoViewIfNeeded();
      await page.screenshot({ path: `${SHOTS}/dashboard-after-retry.png`, fullPage: true });
    } finally {
      await context.close();
    }
  });
});

/** The card of one job, found by the link to its page. */
function jobCard(page: import('playwright-core').Page, jobId: string) {
  return page.locator(`a[href*="/queue/batch-sync/${jobId}"]`).first();
}

/** The retry (refresh icon) button in the header of that job's card. */
function retryButton(page: import('playwright-core').Page, jobId: string) {
  return page.locator(
    `xpath=//a[contains(@href, "/${jobId}")]/ancestor::div[.//button//*[contains(@class, "lucide-refresh-cw")]][1]//button[.//*[contains(@class, "lucide-refresh-cw")]]`,
  );
}
