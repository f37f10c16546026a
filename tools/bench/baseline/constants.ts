/** Names shared by the baseline worker (server child) and the baseline client (load process). */
export const BARE_TASK_QUEUE = 'bench-bare';
export const BARE_WORKFLOW_TYPE = 'bareHello';
