import type { Config } from '../config.js';
import { freeBytes, megabytes } from '../db/data-dir-space.js';
import type { Log } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { repeat } from './repeat.js';

const CHECK_EVERY_SECONDS = 30;

export interface DiskSpaceDeps {
  config: Pick<Config, 'dataDir' | 'dataDirLowFreeMb'>;
  metrics: Pick<Metrics, 'dataDirFreeBytes'>;
  log: Log;
}

/**
 * Watches the free space of DATA_DIR's disk while the embedded store runs: a gauge, and a warning
 * when it falls below DATA_DIR_LOW_FREE_MB (once, and again after it has recovered), so that an
 * operator hears of it before writes fail. Checked at once, then every 30 s; returns the stop function.
 */
export async function watchDataDirSpace({ config, metrics, log }: DiskSpaceDeps): Promise<() => Promise<void>> {
  let low = false;
  async function check() {
    try {
      const free = await freeBytes(config.dataDir);
      metrics.dataDirFreeBytes.set(free);
      const nowLow = free < config.dataDirLowFreeMb * 1024 * 1024;
      if (nowLow && !low) {
        log.warn(
          { data_dir: config.dataDir, free_mb: megabytes(free), low_mb: config.dataDirLowFreeMb },
          'DATA_DIR is running out of disk space: writes will fail with 503 once it is full (DATA_DIR_LOW_FREE_MB)',
        );
      } else if (!nowLow && low) log.info({ data_dir: config.dataDir, free_mb: megabytes(free) }, 'DATA_DIR has enough disk space again');
      low = nowLow;
    } catch (err) {
      log.warn({ err: { message: (err as Error).message } }, 'could not read the free space of DATA_DIR');
    }
  }
  await check();
  return repeat(CHECK_EVERY_SECONDS, check);
}
