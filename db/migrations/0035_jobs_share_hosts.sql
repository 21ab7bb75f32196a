-- 0035: a job may say it shares its hosts (issue 34 item 5). A running job whose hosts are
-- already in another running job is refused (409) unless its document says `sharesHosts: true`;
-- Slurm's jobs are stored as Slurm reports them and marked shared when Slurm placed them on
-- nodes another running job holds (partial-node allocations, OverSubscribe).
ALTER TABLE jobs ADD COLUMN shares_hosts boolean NOT NULL DEFAULT false;
