/** The bench's sliced deleteMany is the store's (store/delete-all.ts says why it slices). */
export { deleteAll } from '../../../store/delete-all';
