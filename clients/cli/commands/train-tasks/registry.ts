import { Registry } from '../../../../core/registry.ts';
import type { TaskName } from '../../../../train/run-config.ts';
import type { NewRunTask } from './types.ts';

const newRunTasks = new Registry<NewRunTask>('new-run task');

/** Adds `frost train`'s side of a task; each task's file here calls this once (index.ts imports them). */
export function registerNewRunTask(task: NewRunTask): void {
  newRunTasks.register(task.task, task);
}

/** `frost train`'s side of `task`; a task with none registered is refused, naming those that have one. */
export function newRunTask(task: TaskName): NewRunTask {
  return newRunTasks.get(task);
}

/** `--task a|b` for the tasks that declare `capability`, for the refusals of their flags. */
export function tasksWith(capability: 'jointVocabulary' | 'compactOutput'): string {
  return `--task ${newRunTasks
    .names()
    .filter((name) => newRunTasks.get(name)[capability] === true)
    .join('|')}`;
}
