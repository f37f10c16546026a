/**
 * Counting store round trips with the driver's command monitoring (a client made with
 * `monitorCommands: true`): every command the service sends, by collection, split into reads
 * and writes. Used by the round-trip budget test and the bench's P6 row
 * (docs/architecture.md "Store round trips"); handshakes and heartbeats are not commands the
 * service chose to send and are left out.
 */
import type { CommandStartedEvent, MongoClient } from 'mongodb';

const WRITES = new Set(['insert', 'update', 'delete', 'findAndModify']);
const IGNORED = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'ping',
  'endSessions',
  'saslStart',
  'saslContinue',
  'buildInfo',
  'killCursors',
]);

export interface StoreCommand {
  name: string;
  collection: string;
  write: boolean;
}

export interface CommandLog {
  /** Commands since the log was made (or last taken). */
  commands: StoreCommand[];
  /** Returns the commands so far and starts a fresh list. */
  take(): StoreCommand[];
  stop(): void;
}

/** The command an event reports, or null for a handshake or heartbeat. */
export function storeCommand(event: CommandStartedEvent): StoreCommand | null {
  if (IGNORED.has(event.commandName)) return null;
  const target = event.command[event.commandName];
  return {
    name: event.commandName,
    collection: typeof target === 'string' ? target : '',
    write: WRITES.has(event.commandName),
  };
}

/** Starts logging the commands `client` sends (it must have been made with `monitorCommands: true`). */
export function logCommands(client: MongoClient): CommandLog {
  const log: CommandLog = {
    commands: [],
    take: () => log.commands.splice(0),
    stop: () => client.off('commandStarted', listener),
  };
  const listener = (event: CommandStartedEvent) => {
    const command = storeCommand(event);
    if (command) log.commands.push(command);
  };
  client.on('commandStarted', listener);
  return log;
}

/** "2 writes (insert runs, update rate_limits), 0 reads": a list of commands in a line. */
export function describeCommands(commands: StoreCommand[]): string {
  const part = (write: boolean) => {
    const list = commands.filter((c) => c.write === write);
    const noun = write ? 'write' : 'read';
    return `${list.length} ${noun}${list.length === 1 ? '' : 's'}${list.length ? ` (${list.map((c) => `${c.name} ${c.collection}`).join(', ')})` : ''}`;
  };
  return `${part(true)}, ${part(false)}`;
}
