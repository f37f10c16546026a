/** The 403 of a signed link (a D19 file link or a D34 stream link) that is not, or no longer, valid. */
import { DomainError } from '../../domain/errors';

export type LinkRefusal = 'invalid_signature' | 'url_expired' | 'key_revoked';

const MESSAGES: Record<'file' | 'stream', Record<LinkRefusal, string>> = {
  file: {
    invalid_signature: 'This file link is not valid.',
    url_expired: 'This file link has expired. Ask for a new one.',
    key_revoked: 'The API key this file link was made for has been revoked.',
  },
  stream: {
    invalid_signature: 'This stream link is not valid.',
    url_expired: 'This stream link has expired. Ask your backend for a new one.',
    key_revoked: 'The API key this stream link was made for has been revoked.',
  },
};

/** 403 with a code that says why (docs/api.md "Files" and "Stream links"). */
export class LinkRefusedError extends DomainError {
  constructor(link: 'file' | 'stream', code: LinkRefusal) {
    super('forbidden', MESSAGES[link][code], { code });
  }
}
